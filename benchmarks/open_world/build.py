# -*- coding: utf-8 -*-
"""Build entities.yaml, validation.jsonl and test.jsonl from world.py and questions.txt.

Every question is hand-written in questions.txt with its argument values marked inline;
this script only strips the markup, assigns ids, splits 40/60 and checks that every answer
is well defined (unique person / publication, strict maxima, one advisor, ...).

    python3 build.py            # writes the three files, prints a report, exits 1 on errors
"""
import collections
import json
import os
import random
import re
import sys
import unicodedata

import yaml

from world import FIELDS, ORGS, PUBS, SCHOLARS, TIES

HERE = os.path.dirname(os.path.abspath(__file__))
STYLES = {"full", "terse", "keyword", "organisation_first", "run_on", "typo", "lowercase", "polite"}
PERSON_INTENTS = [
    "person_organization", "person_citation_count", "person_publication_count", "person_interests",
    "coauthor_names", "closest_collaborator", "coauthor_count", "advisor_name", "student_names",
    "person_gender", "person_position", "person_education", "person_email", "person_bio",
    "representative_work_title", "representative_work_citations", "representative_work_venue",
    "representative_work_abstract", "representative_work_pdf", "publication_titles",
    "latest_publication", "first_publication_year", "collaborators_of_closest_collaborator",
    "collaborators_of_collaborators", "most_cited_coauthor", "coauthors_at_organization",
    "coauthors_in_field", "closest_collaborator_organization", "closest_collaborator_position",
    "closest_collaborator_interests", "closest_collaborator_representative_work",
    "closest_collaborator_paper_count",
]
HEAD_INTENTS = ["scholars_at_organization", "scholars_in_field", "scholars_at_organization_in_field"]
PUB_INTENTS = [
    "publication_year", "publication_abstract", "publication_venue", "publication_citations",
    "publication_pdf", "first_author_collaborators", "last_author_coauthor_count",
    "first_author_education", "first_author_gender", "last_author_email", "last_author_position",
    "most_cited_author", "first_author_interests", "authors_in_field",
    "first_author_representative_work", "last_author_paper_count", "first_author_titles",
]
ALL_INTENTS = PERSON_INTENTS + HEAD_INTENTS + PUB_INTENTS + ["unsupported"]
MARK = re.compile(r"\[([noipaf]):([^\]]+)\]")
KEYS = {"n": "name", "o": "organization", "i": "interest", "p": "publication_info",
        "a": "affiliation", "f": "field"}
COMPANIES = {"aws", "zhipu", "google", "spotify", "msra", "meta", "bosch", "alibaba", "baidu"}
CJK = re.compile(r"[\u4e00-\u9fff]")

errors = []


def err(msg):
    errors.append(msg)


def fold(s):
    return s.casefold().strip()


def ascii_fold(s):
    s = s.replace("ß", "ss").replace("ø", "o").replace("ł", "l")
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c))


# ---------------------------------------------------------------- world
S = {}
for row in SCHOLARS:
    key, name, zh, org, interests, cit, npubs, gender, pos, edu, extra = row
    if key in S:
        err(f"duplicate scholar key {key}")
    if org not in ORGS:
        err(f"{key}: unknown org {org}")
    for f in interests:
        if f not in FIELDS:
            err(f"{key}: unknown field {f!r}")
    S[key] = dict(key=key, name=name, name_zh=zh, org=org, interests=interests, cit=cit, npubs=npubs,
                  gender=gender, position=pos, education=edu, name_aliases=list(extra.get("name_aliases", [])),
                  bio=extra.get("bio"), used_org_forms=[], used_name_forms=[])

P = {}
for key, title, year, venue, authors, cit, abstract in PUBS:
    if key in P:
        err(f"duplicate pub key {key}")
    for a in authors:
        if a not in S:
            err(f"pub {key}: unknown author {a}")
    P[key] = dict(key=key, title=title, year=year, venue=venue, authors=authors, cit=cit, abstract=abstract)
titles = collections.Counter(fold(p["title"]) for p in P.values())
for t, c in titles.items():
    if c > 1:
        err(f"duplicate title {t}")

# co-author graph: G[a][b] = [relation of b as seen from a, joint]
G = collections.defaultdict(dict)
for line in TIES.strip().splitlines():
    kind, a, b, joint = line.split()
    joint = int(joint)
    for x in (a, b):
        if x not in S:
            err(f"tie {line}: unknown {x}")
    if b in G[a]:
        err(f"duplicate tie {a}-{b}")
    if kind == "adv":
        G[a][b] = ["student", joint]
        G[b][a] = ["advisor", joint]
    else:
        G[a][b] = ["coauthor", joint]
        G[b][a] = ["coauthor", joint]
shared = collections.Counter()
for p in P.values():
    au = p["authors"]
    for i in range(len(au)):
        for j in range(i + 1, len(au)):
            shared[tuple(sorted((au[i], au[j])))] += 1
auto_ties = []
for (a, b), n in sorted(shared.items()):
    if b in G[a]:
        if G[a][b][1] < n:
            err(f"tie {a}-{b}: joint {G[a][b][1]} < {n} shared papers in file")
    else:
        G[a][b] = ["coauthor", n]
        G[b][a] = ["coauthor", n]
        auto_ties.append((a, b, n))

PUBS_OF = collections.defaultdict(list)
for p in P.values():
    for a in p["authors"]:
        PUBS_OF[a].append(p["key"])
for k, s in S.items():
    if s["npubs"] < len(PUBS_OF[k]):
        err(f"{k}: num_pubs {s['npubs']} < {len(PUBS_OF[k])} papers in file")
    total = sum(P[p]["cit"] for p in PUBS_OF[k])
    if s["cit"] < total:
        err(f"{k}: num_citation {s['cit']} < {total} cited papers in file")
    if not G[k]:
        err(f"{k}: no co-authors at all")


def org_names(okey):
    canon, zh, aliases, _ = ORGS[okey]
    return canon, zh, aliases


def orgs_matching(arg):
    a = fold(arg)
    if a.startswith("the "):
        a2 = a[4:]
    else:
        a2 = a
    out = set()
    for k, (canon, zh, aliases, _) in ORGS.items():
        forms = [canon] + ([zh] if zh else []) + aliases
        if any(fold(f) == a for f in forms):
            out.add(k)
            continue
        for f in [canon] + ([zh] if zh else []):
            ff = fold(f)
            if CJK.search(a2):
                if a2 in ff:
                    out.add(k)
            elif re.search(r"(^|[\s,(-])" + re.escape(a2) + r"($|[\s,)])", ff):
                out.add(k)
    return out


def field_match(fieldname, arg):
    a = fold(arg)
    zh, aliases = FIELDS[fieldname]
    if a == fold(fieldname) or arg == zh or a in [fold(x) for x in aliases]:
        return True
    if len(a) >= 4 and re.search(r"(^|\s)" + re.escape(a) + r"($|\s)", fold(fieldname)):
        return True
    return False


def interest_match(skey, arg):
    return any(field_match(f, arg) for f in S[skey]["interests"])


def name_variants(s):
    out = set()
    forms = [s["name"]] + s["name_aliases"]
    for f in forms:
        toks = f.split()
        out.add(fold(f))
        if len(toks) >= 2:
            out.add(fold(" ".join(toks[-1:] + toks[:-1])))
            out.add(fold(" ".join(toks[1:] + toks[:1])))
    if s["name_zh"]:
        out.add(s["name_zh"])
    return out


NV = {k: name_variants(s) for k, s in S.items()}


def resolve_person(args):
    cands = [k for k in S if fold(args["name"]) in NV[k]]
    if "organization" in args:
        om = orgs_matching(args["organization"])
        cands = [k for k in cands if S[k]["org"] in om]
    if "interest" in args:
        cands = [k for k in cands if interest_match(k, args["interest"])]
    return cands


def resolve_pub(info):
    return [k for k, p in P.items() if fold(info) in fold(p["title"])]


def strict_max(items, keyf):
    items = list(items)
    if not items:
        return None
    items.sort(key=keyf, reverse=True)
    if len(items) > 1 and keyf(items[0]) == keyf(items[1]):
        return None
    return items[0]


def closest(k):
    return strict_max(G[k].keys(), lambda o: G[k][o][1])


def rep_work(k):
    return strict_max(PUBS_OF[k], lambda p: P[p]["cit"])


def check_person_intent(intent, k, args, qid):
    def need(cond, what):
        if not cond:
            err(f"{qid} {intent} {k}: {what}")

    co = G[k]
    if intent in ("closest_collaborator",) or intent.startswith("closest_collaborator_") \
            or intent == "collaborators_of_closest_collaborator":
        c = closest(k)
        need(c is not None, "closest collaborator not unique")
        if c is None:
            return
        if intent == "collaborators_of_closest_collaborator":
            need(len([x for x in G[c] if x != k]) >= 1, "closest has no other co-authors")
        if intent == "closest_collaborator_representative_work":
            need(rep_work(c) is not None, f"closest {c} has no unique representative work")
        return
    if intent == "advisor_name":
        need(sum(1 for v in co.values() if v[0] == "advisor") == 1, "not exactly one advisor")
    elif intent == "student_names":
        need(any(v[0] == "student" for v in co.values()), "no students")
    elif intent.startswith("representative_work"):
        need(rep_work(k) is not None, "no unique representative work")
    elif intent == "publication_titles":
        need(len(PUBS_OF[k]) >= 2, "fewer than 2 papers")
    elif intent == "latest_publication":
        need(strict_max(PUBS_OF[k], lambda p: P[p]["year"]) is not None, "latest paper not unique")
    elif intent == "first_publication_year":
        need(len(PUBS_OF[k]) >= 1, "no papers")
    elif intent == "most_cited_coauthor":
        need(strict_max(co.keys(), lambda o: S[o]["cit"]) is not None, "most cited co-author not unique")
    elif intent == "coauthors_at_organization":
        om = orgs_matching(args["affiliation"])
        hits = [o for o in co if S[o]["org"] in om]
        need(hits, f"no co-author at {args['affiliation']}")
        need(len(hits) < len(co), "all co-authors match the affiliation")
        return hits
    elif intent == "coauthors_in_field":
        hits = [o for o in co if interest_match(o, args["field"])]
        need(hits, f"no co-author in field {args['field']}")
        return hits
    elif intent in ("coauthor_names", "coauthor_count", "collaborators_of_collaborators"):
        need(len(co) >= 2, "fewer than 2 co-authors")


def check_pub_intent(intent, pk, args, qid):
    def need(cond, what):
        if not cond:
            err(f"{qid} {intent} {pk}: {what}")

    p = P[pk]
    first, last = p["authors"][0], p["authors"][-1]
    if intent.startswith("last_author") or intent.startswith("first_author"):
        need(len(p["authors"]) >= 2 or intent.startswith("first_author"), "single-author paper")
    if intent == "first_author_collaborators":
        need(len(G[first]) >= 1, "first author has no co-authors")
    elif intent == "most_cited_author":
        need(strict_max(p["authors"], lambda a: S[a]["cit"]) is not None, "most cited author not unique")
    elif intent == "authors_in_field":
        hits = [a for a in p["authors"] if interest_match(a, args["field"])]
        need(hits, f"no author in field {args['field']}")
        return hits
    elif intent == "first_author_representative_work":
        need(rep_work(first) is not None, "first author has no unique representative work")
    elif intent == "first_author_titles":
        need(len(PUBS_OF[first]) >= 1, "first author has no papers")


# ---------------------------------------------------------------- questions
def parse_questions():
    out = []
    with open(os.path.join(HERE, "questions.txt"), encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(" | ", 3)
            if len(parts) != 4:
                err(f"line {ln}: cannot parse")
                continue
            intent, target, style, marked = (x.strip() for x in parts)
            args = {}
            for m in MARK.finditer(marked):
                key = KEYS[m.group(1)]
                if key in args:
                    err(f"line {ln}: argument {key} twice")
                args[key] = m.group(2)
            question = MARK.sub(lambda m: m.group(2), marked)
            if "[" in question or "]" in question:
                err(f"line {ln}: stray bracket")
            out.append(dict(ln=ln, intent=intent, target=target, style=style, question=question, args=args))
    return out


def main():
    qs = parse_questions()
    records = []
    counters = {"en": 0, "zh": 0}
    head_answers = []
    for q in qs:
        ln, intent, target, style, text, args = q["ln"], q["intent"], q["target"], q["style"], q["question"], q["args"]
        qid = f"line {ln}"
        lang = "zh" if CJK.search(text) else "en"
        if intent not in ALL_INTENTS:
            err(f"{qid}: unknown intent {intent}")
            continue
        if style not in STYLES:
            err(f"{qid}: unknown style {style}")
        if style == "lowercase" and lang == "en" and text != text.lower():
            err(f"{qid}: lowercase question has capitals")
        for v in args.values():
            if v not in text:
                err(f"{qid}: argument {v!r} not a substring")
        scholar = publication = None
        if intent == "unsupported":
            kind = "unsupported"
            if "name" in args and len(resolve_person(args)) != 1:
                err(f"{qid}: unsupported question's person does not resolve uniquely")
        elif intent in HEAD_INTENTS:
            kind = "answer"
            need = {"scholars_at_organization": {"organization"}, "scholars_in_field": {"interest"},
                    "scholars_at_organization_in_field": {"organization", "interest"}}[intent]
            if set(args) != need:
                err(f"{qid}: head-only arguments {sorted(args)} != {sorted(need)}")
            om = orgs_matching(args["organization"]) if "organization" in args else None
            if "organization" in args and not om:
                err(f"{qid}: organization {args['organization']!r} matches no org")
            hits = [k for k in S if (om is None or S[k]["org"] in om)
                    and ("interest" not in args or interest_match(k, args["interest"]))]
            if not hits:
                err(f"{qid}: head-only question has no answer")
            head_answers.append((text, sorted(S[h]["name"] for h in hits)))
        elif intent in PUB_INTENTS:
            kind = "answer"
            if "publication_info" not in args:
                err(f"{qid}: no publication_info")
                continue
            allowed = {"publication_info"} | ({"field"} if intent == "authors_in_field" else set())
            if set(args) != allowed:
                err(f"{qid}: arguments {sorted(args)} != {sorted(allowed)}")
            hits = resolve_pub(args["publication_info"])
            if hits != [target]:
                err(f"{qid}: publication_info {args['publication_info']!r} resolves to {hits}, expected {target}")
                continue
            publication = target
            check_pub_intent(intent, target, args, qid)
        else:  # person-headed
            allowed = {"name", "organization", "interest"}
            if intent == "coauthors_at_organization":
                allowed = allowed | {"affiliation"}
            if intent == "coauthors_in_field":
                allowed = allowed | {"field"}
            if "name" not in args or not set(args) <= allowed:
                err(f"{qid}: bad arguments {sorted(args)}")
                continue
            if intent == "coauthors_at_organization" and "affiliation" not in args:
                err(f"{qid}: missing affiliation")
            if intent == "coauthors_in_field" and "field" not in args:
                err(f"{qid}: missing field")
            if target == "-":
                kind = "not_found"
                if [k for k in S if fold(args["name"]) in NV[k]]:
                    err(f"{qid}: not_found name {args['name']!r} exists")
            else:
                kind = "answer"
                if target not in S:
                    err(f"{qid}: unknown scholar {target}")
                    continue
                hits = resolve_person(args)
                if hits != [target]:
                    err(f"{qid}: person {args} resolves to {hits}, expected {target}")
                    continue
                scholar = target
                check_person_intent(intent, target, args, qid)
        # record forms used, for aliases
        if kind in ("answer", "unsupported"):
            for key in ("organization", "affiliation"):
                if key in args:
                    for okey in orgs_matching(args[key]):
                        for sk, s in S.items():
                            if s["org"] == okey:
                                s["used_org_forms"].append(args[key])
            if scholar and "name" in args:
                S[scholar]["used_name_forms"].append(args["name"])
        counters[lang] += 1
        records.append({
            "id": f"ow-{lang}-{counters[lang]:04d}",
            "language": lang,
            "question": text,
            "intent": intent,
            "arguments": {k: args[k] for k in ("name", "organization", "interest", "publication_info",
                                                 "affiliation", "field") if k in args},
            "scholar": None if scholar is None else sid[scholar],
            "publication": None if publication is None else pid[publication],
            "style": style,
            "expected_kind": kind,
        })
    return records, head_answers


sid = {k: f"s{i + 1:03d}" for i, k in enumerate(S)}
pid = {k: f"p{i + 1:03d}" for i, k in enumerate(P)}


def email_of(i, s):
    toks = [re.sub(r"[^a-z]", "", ascii_fold(t).lower()) for t in s["name"].split()]
    toks = [t for t in toks if t]
    first, last = toks[0], toks[-1]
    if s["name"].startswith("J. R."):
        first = "jr"
    style = i % 3
    local = {0: f"{first}.{last}", 1: f"{first[0]}{last}", 2: f"{last}{first[0]}"}[style]
    stub = ORGS[s["org"]][3]
    tld = "example.com" if s["org"] in COMPANIES else "example.edu"
    return f"{local}@{stub}.{tld}"


def org_phrase(okey):
    canon = ORGS[okey][0]
    first = canon.split()[0]
    if first in {"Department", "School", "Institute", "College", "Faculty", "Graduate", "Machine",
                 "Language", "Informatics"}:
        return "the " + canon
    return canon


def bio_of(k, s):
    if s["bio"]:
        return s["bio"]
    pron, poss = ("She", "her") if s["gender"] == "female" else ("He", "his")
    org = org_phrase(s["org"])
    ints = s["interests"]
    topic = ints[0] if len(ints) == 1 else ", ".join(ints[:-1]) + " and " + ints[-1]
    adv = [o for o, v in G[k].items() if v[0] == "advisor"]
    pos = s["position"]
    if "Student" in pos:
        text = f"{s['name']} is a {pos.replace('Student', 'student').replace('Master', 'master')} at {org}"
        if adv:
            text += f", supervised by {S[adv[0]]['name']}"
        return text + f". {pron} works on {topic}."
    art = "an" if pos[0].lower() in "aeiou" else "a"
    degree, _, school = s["education"].split(";")[0].strip().partition(", ")
    text = f"{s['name']} is {art} {pos} at {org}, working on {topic}."
    if school:
        text += f" {pron} received {poss} {degree} from {school}."
    return text


def slug(text):
    t = re.sub(r"[^a-z0-9]+", "-", ascii_fold(text).lower()).strip("-")
    return t[:60].rstrip("-")


def write_entities():
    scholars = []
    for i, (k, s) in enumerate(S.items()):
        canon, zh, aliases, _ = ORGS[s["org"]]
        org_aliases = []
        for f in s["used_org_forms"]:
            if fold(f) in (fold(canon), fold(zh or "")):
                continue
            if fold(f) not in [fold(x) for x in org_aliases]:
                org_aliases.append(f)
        name_aliases = list(s["name_aliases"])
        for f in s["used_name_forms"]:
            if f == s["name_zh"] or fold(f) == fold(s["name"]):
                continue
            if fold(f) not in [fold(x) for x in name_aliases]:
                name_aliases.append(f.title() if f == f.lower() else f)
        int_aliases = sorted({a for f in s["interests"] for a in FIELDS[f][1]})
        coauthors = sorted(G[k].items(), key=lambda kv: (-kv[1][1], sid[kv[0]]))
        scholars.append({
            "id": sid[k],
            "name": s["name"],
            "name_zh": s["name_zh"],
            "organization": canon,
            "organization_zh": zh,
            "aliases": org_aliases,
            "name_aliases": name_aliases,
            "interests": s["interests"],
            "interests_zh": [FIELDS[f][0] for f in s["interests"]],
            "interest_aliases": int_aliases,
            "num_citation": s["cit"],
            "num_pubs": s["npubs"],
            "gender": s["gender"],
            "position": s["position"],
            "email": email_of(i, s),
            "education": s["education"],
            "bio": bio_of(k, s),
            "coauthors": [{"id": sid[o], "relation": v[0], "joint": v[1]} for o, v in coauthors],
        })
    pubs = []
    for k, p in P.items():
        sl = slug(p["title"])
        pubs.append({
            "id": pid[k],
            "title": p["title"],
            "year": p["year"],
            "venue": p["venue"],
            "abstract": p["abstract"],
            "authors": [sid[a] for a in p["authors"]],
            "num_citation": p["cit"],
            "pdf_url": f"https://papers.example.org/{p['year']}/{pid[k]}" + (f"-{sl}" if sl else "") + ".pdf",
        })
    header = ("# Open-world evaluation set: the invented scholars and publications the questions are about.\n"
              "# Written blind (see README.md). Insert into a copy of the test corpus before answering.\n"
              "# aliases: organisation forms written in the questions; name_aliases: other spellings of the\n"
              "# name used in questions; interests_zh / interest_aliases: forms of the interests used.\n")
    with open(os.path.join(HERE, "entities.yaml"), "w", encoding="utf-8") as fh:
        fh.write(header)
        yaml.safe_dump({"scholars": scholars, "publications": pubs}, fh, allow_unicode=True,
                       sort_keys=False, width=4096, default_flow_style=None)


def split(records):
    groups = collections.defaultdict(list)
    for r in records:
        if r["expected_kind"] == "answer":
            groups[(r["language"], r["intent"], r["expected_kind"])].append(r)
        else:  # few per intent: stratify not_found / unsupported by language only
            groups[(r["language"], "-", r["expected_kind"])].append(r)
    val, test = set(), set()
    for key in sorted(groups):
        g = groups[key]
        rng = random.Random("open-world-split:" + "|".join(key))
        order = g[:]
        rng.shuffle(order)
        n_val = int(round(0.4 * len(order) + 1e-9))
        for r in order[:n_val]:
            val.add(r["id"])
        for r in order[n_val:]:
            test.add(r["id"])
    return [r for r in records if r["id"] in val], [r for r in records if r["id"] in test]


if __name__ == "__main__":
    records, head_answers = main()
    vs, ts = split(records)
    if errors:
        print("\n".join("ERROR " + e for e in errors))
        sys.exit(1)
    write_entities()
    for name, rows in (("validation.jsonl", vs), ("test.jsonl", ts)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"scholars {len(S)}, publications {len(P)}, questions {len(records)} "
          f"(validation {len(vs)}, test {len(ts)})")
    print("auto-added co-author ties from shared papers:", len(auto_ties))
    if "-v" in sys.argv:
        for t in auto_ties:
            print("  auto tie", t)
        for text, ans in head_answers:
            print("  HEAD", text, "->", ans)
