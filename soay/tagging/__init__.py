"""The mention tagger: typed spans (a person's name, an organisation, a research field, a title,
any parameter of a spec) found by a model learnt from the generated questions, whose spans are
known, with values drawn from open-world generators rather than the corpus (open_world.yaml)."""
