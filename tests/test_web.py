"""The web page in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright,
against the application that test_serving.py uses (tests/conftest.py `served`, the real Serve app
with its API key and the log broker).

The model behind the app is small and changes with its recipe, so the page is held to showing
every stage, the answer, the solution and the code, not to answering right. Screenshots go to
$SOAY_SCREENSHOTS when it is set (`SOAY_SCREENSHOTS=docs/screenshots` refreshes the ones the
README shows), else to a temporary folder, so a test run leaves the checkout as it was: each view
at 1280x900 in light (`ask.png`...), and at 390x844 (a phone) and in the dark (`ask-phone.png`,
`ask-phone-dark.png`, `ask-dark.png`...). Every request the browser makes is recorded: none may
leave the machine. The broker-absent test needs no app: it runs the ingress's log stream
(`open_log_stream` with the service's metrics registry) against a port nobody listens on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import AUTH, KEY, ROOT, free_port
from soay.answers import answers_match
from soay.clarifications import is_clarification
from test_logstream import read_until
from test_serving import ask

SCREENSHOTS = ROOT / os.environ["SOAY_SCREENSHOTS"] if os.environ.get("SOAY_SCREENSHOTS") else Path(tempfile.gettempdir()) / "soay-screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
ANSWER_S = 120
"""Longest wait for a question to be answered in the browser (the CI machine has 2 busy cores)."""
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
SCREENSHOT_TRIES = 8
WIDE, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}
CLIPBOARD = ["clipboard-read", "clipboard-write"]


# --- the browser --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the system (`make install` puts it there), never a downloaded one."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (make install does it as root)")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, served) -> Iterator:
    """A fresh page (no stored key) whose every request URL is recorded in `page.requested`;
    after the test, all of them must have gone to this machine."""
    context = browser.new_context(viewport=WIDE, locale="en-US")
    context.grant_permissions(CLIPBOARD)
    tab = context.new_page()
    tab.requested = []
    tab.on("request", lambda request: tab.requested.append(request.url))
    tab.set_default_timeout(ANSWER_S * 1000)
    yield tab
    context.close()
    outside = [u for u in tab.requested if urlsplit(u).hostname not in LOCAL_HOSTS]
    assert tab.requested and not outside, outside


def open_page(tab, url: str, path: str = "/") -> None:
    """Open a view and give the API key the page asks for."""
    tab.goto(f"{url}{path}")
    tab.wait_for_selector("#key-panel:not([hidden])")
    tab.fill("#key-input", KEY)
    tab.click("#key-form button")
    assert tab.is_hidden("#key-panel")


def ask_in_page(tab, question: str) -> None:
    """Type a question, ask it, and wait until it is answered or an error shows."""
    tab.fill("#question", question)
    tab.click("#ask-button")
    wait_until_answered(tab)


def wait_until_answered(tab) -> None:
    tab.wait_for_function("document.querySelector('#stage-answer.done') || !document.querySelector('#ask-error').hidden",
                          timeout=ANSWER_S * 1000)


def assert_replied(tab) -> str:
    """An answer (possibly that the question is out of scope), the good/bad buttons to judge it,
    and the request id kept for support (a data attribute, and a closed details element): never
    shown in the page's text."""
    assert tab.is_hidden("#ask-error"), tab.inner_text("#ask-error")
    tab.wait_for_selector("#outcome[data-request-id]")
    assert tab.inner_text("#answer").strip()
    assert tab.is_visible("#good") and tab.is_visible("#bad")
    request_id = tab.get_attribute("#outcome", "data-request-id")
    assert request_id and request_id not in tab.inner_text("body")
    return request_id


def assert_fits(tab) -> None:
    """Nothing wider than the window: no sideways scrolling of the page (a wide table or graph
    scrolls inside its own box)."""
    width, window = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= window, f"the page is {width} px wide in a {window} px window"


def shoot(tab, name: str) -> None:
    """Screenshots of the view as it is, at both sizes and in both color schemes, each checked to
    fit its window: `{name}.png` (1280 wide, light: the README's), `{name}-dark.png`,
    `{name}-phone.png`, `{name}-phone-dark.png`. Leaves the page at 1280, light."""
    for size, suffix in ((PHONE, "-phone"), (WIDE, "")):
        tab.set_viewport_size(size)
        for scheme in ("dark", "light"):
            tab.emulate_media(color_scheme=scheme)
            tab.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")  # laid out again
            assert_fits(tab)
            tab.screenshot(path=SCREENSHOTS / f"{name}{suffix}{'-dark' if scheme == 'dark' else ''}.png", full_page=True)


def assert_answered(tab) -> str:
    """Every stage done with its time, then the answer, the solution path and the code; the request id."""
    request_id = assert_replied(tab)
    stages = tab.locator(".stages li.done")
    assert stages.count() == 5
    assert all(t.strip().endswith(" s") for t in tab.locator(".stages li.done .time").all_inner_texts())
    assert tab.inner_text("#answer").strip()
    assert tab.locator("#solution .api").count() >= 1
    assert "final_result" in tab.inner_text("#code")
    return request_id


# --- the page in the browser ---------------------------------------------------------------------

def answered_right(url: str, test: list, language: str, hops: int | None = None):
    """A value question (not a clarification) of the test split that the served model answers right,
    asked over the API first so that a screenshot never shows a wrong answer; the first one when
    none of the tries is."""
    tries = [t for t in test if t.language == language and hops in (None, t.hops) and not is_clarification(t.answer)]
    tries = tries[:SCREENSHOT_TRIES]
    return next((t for t in tries if answers_match(t.answer, ask(url, t.query).json().get("result"))), tries[0])


def test_questions_in_english_and_chinese_are_answered_stage_by_stage_and_bad_feedback_is_logged(served, log_broker, page):
    from soay.domains import get_domain
    from soay.logs import Feedback

    url, settings, test = served
    open_page(page, url)
    assert page.locator("#examples .example").count() >= 2  # example questions to click, both languages
    assert page.locator("#examples .example[lang=zh]").count() >= 1

    # the README opens with this screenshot: a two-hop question the small model answers right
    assert page.is_hidden("#good") and page.is_hidden("#bad")  # nothing to judge yet
    ask_in_page(page, answered_right(url, test, "en", hops=2).query)
    assert_answered(page)
    assert " -> ".join(page.locator("#solution .api").all_inner_texts()) in {str(s) for s in get_domain(settings.data.domain).library}
    shoot(page, "ask")

    example = page.locator("#examples .example[lang=zh]").first  # a click on an example asks it
    example.click()
    assert page.input_value("#question") == example.inner_text()
    wait_until_answered(page)
    assert_answered(page)  # every stage ran: an example is never refused as out of scope

    ask_in_page(page, answered_right(url, test, "zh").query)
    request_id = assert_answered(page)
    page.screenshot(path=SCREENSHOTS / "ask-zh.png", full_page=True)

    page.click("#bad")
    if page.is_visible("#alternatives"):  # other readings offered: this person meant none of them
        page.click("#none-of-these")
    page.wait_for_selector("#feedback-status:has-text('recorded as bad')")
    records = read_until(log_broker[-1].bootstrap, settings.kafka.feedback_topic,
                         lambda rs: request_id in {Feedback.decode(r.value).request_id for r in rs})
    assert [Feedback.decode(r.value).verdict for r in records if Feedback.decode(r.value).request_id == request_id] == ["bad"]

    # a name nobody carries: the answer says what was searched, and no failure box beside it
    ask_in_page(page, "Who are the coauthors of Zzyzx Qwerty at Nowhere University?")
    assert_replied(page)
    assert "Zzyzx Qwerty" in page.inner_text("#answer")
    assert page.is_hidden("#exec-error") and page.is_hidden("#candidates")
    assert "searchPerson" in page.inner_text("#explanation")


def test_an_empty_and_a_1mb_question_show_a_message_not_json(served, page):
    url, _, _ = served
    open_page(page, url)
    ask_in_page(page, "   ")
    message = page.inner_text("#ask-error")
    assert "(422)" in message and "query is empty" in message and not message.lstrip().startswith("{")

    page.eval_on_selector("#question", "(box) => { box.value = 'x'.repeat(1_000_000); }")
    page.click("#ask-button")
    page.wait_for_selector("#ask-error:has-text('(413)')")
    message = page.inner_text("#ask-error")
    assert "larger than" in message and not message.lstrip().startswith("{")
    page.screenshot(path=SCREENSHOTS / "error.png")


def test_library_view_draws_every_api_and_its_examples_ask(served, page):
    from soay.domains import get_domain

    url, settings, _ = served
    domain = get_domain(settings.data.domain)
    open_page(page, url, "/library")
    page.wait_for_selector("#graph svg")
    drawn = {api: page.locator(f"#graph g.node[data-api='{api}'] text").text_content() for api in (a.name for a in domain.spec.apis)}
    assert drawn == {a.name: a.name for a in domain.spec.apis}
    assert page.locator("#graph path.edge").count() == len({(s, c.dst) for s, cs in domain.library.graph.edges.items() for c in cs})
    assert page.locator("#solutions .solution").count() == len(domain.library)
    assert all(word in page.inner_text(".legend-words") for word in ("lookup", "branch", "loop"))  # the words the solutions use
    assert page.locator("#solutions details.solution[open]").count() == 0  # one line per solution until opened
    page.locator("#solutions .solution summary").first.click()
    shoot(page, "library")

    example = page.locator("#solutions .ask-link").first
    question = example.inner_text()
    example.click()
    assert urlsplit(page.url).path == "/" and page.input_value("#question") == question
    wait_until_answered(page)
    assert_replied(page)


def test_live_view_shows_rates_stage_latencies_and_models(served, page):
    url, settings, test = served
    open_page(page, url, "/live")
    page.wait_for_function("document.querySelector('#live-rps').textContent !== '–'", timeout=30_000)  # two scrapes: a rate
    for t in test[:3]:  # traffic while the view watches: the rate and the last interval's latencies move
        httpx.post(f"{url}/v1/ask", json={"query": t.query}, headers=AUTH, timeout=ANSWER_S)
    page.wait_for_function("Number(document.querySelector('#live-rps').textContent) > 0", timeout=30_000)
    stages = page.inner_text("#live-stages")
    assert all(stage in stages for stage in ("retrieve", "plan", "code", "execute", "answer")) and " s" in stages
    models = page.inner_text("#live-models")
    assert settings.serve.planner_model in models and settings.serve.coder_model in models
    versions = page.locator("#live-models td[title]")  # a version: its run's name and day, its path only in a tooltip
    assert versions.count() >= 2
    for version in versions.all():
        shown, path = version.inner_text(), Path(version.get_attribute("title"))
        assert path.parent.name in shown and str(path) not in shown and re.search(r"\b\d{4}-\d{2}-\d{2}\b", shown), shown
    assert "questions taken" in page.inner_text("#live-total") and "questions" in page.inner_text("#live-stages")
    shoot(page, "live")


def test_on_a_phone_in_the_dark_answers_copy_link_back_and_stay_in_the_history(served, browser):
    """At 390x844 with the browser asking for dark: dark colours; good/bad only once there is an
    answer; the copy buttons put the answer, the code and a link in the clipboard; the link asks
    the question again in a new tab; after a reload the history holds the question and shows its
    answer again without asking."""
    url, _, test = served
    context = browser.new_context(viewport=PHONE, locale="en-US", color_scheme="dark")
    context.grant_permissions(CLIPBOARD)
    tab = context.new_page()
    tab.set_default_timeout(ANSWER_S * 1000)
    asked = []
    tab.on("request", lambda request: asked.append(request.url) if request.url.endswith("/v1/ask/stream") else None)
    try:
        open_page(tab, url)
        background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
        assert sum(int(c) for c in background[background.index("(") + 1:-1].split(",")[:3]) < 3 * 64, background  # dark
        assert tab.is_hidden("#feedback") and tab.is_hidden("#good") and tab.is_hidden("#alternatives")
        assert_fits(tab)

        question = answered_right(url, test, "en", hops=2).query
        ask_in_page(tab, question)
        assert_answered(tab)
        assert_fits(tab)

        clipboard = "navigator.clipboard.readText()"
        tab.click("#copy-answer")
        tab.wait_for_selector("#copy-answer:has-text('Copied')")
        assert tab.evaluate(clipboard) == tab.inner_text("#answer")
        tab.click("#copy-code")
        tab.wait_for_selector("#copy-code:has-text('Copied')")
        assert "final_result" in tab.evaluate(clipboard)
        tab.click("#copy-link")
        tab.wait_for_selector("#copy-link:has-text('Copied')")
        link = tab.evaluate(clipboard)
        assert link.startswith(f"{url}/#q=") and tab.url == link  # the address is the link too

        other = context.new_page()  # the link in a new tab asks it again (the key is in this browser already)
        other.set_default_timeout(ANSWER_S * 1000)
        other.goto(link)
        wait_until_answered(other)
        assert other.input_value("#question") == question
        assert_replied(other)
        other.close()

        tab.reload()
        wait_until_answered(tab)  # the address still asks its question
        answer = tab.inner_text("#answer")
        tab.goto(f"{url}/")  # a bare page: what was asked is in the history, open
        tab.wait_for_selector("#history-panel[open]:not([hidden])")
        before = len(asked)
        entries = tab.locator("#history-list .ask-link", has_text=question)
        assert entries.count() == 1
        entries.click()
        tab.wait_for_selector("#from-history:not([hidden])")
        assert tab.inner_text("#answer") == answer and tab.input_value("#question") == question
        assert len(asked) == before and tab.is_visible("#good")  # shown from the history, not asked again
    finally:
        context.close()


def test_bad_offers_the_other_readings_each_answered_and_records_the_one_picked(served, log_broker, page):
    """Clicking "bad" on an answer that has alternatives shows each next-best reading with its own
    answer ("Did you mean …?"); "This one" records one bad verdict with that reading as its choice."""
    from serving.schemas import Record
    from soay.logs import Feedback

    if "alternatives" not in Record.model_fields:
        pytest.skip("the server gives no alternatives yet (serving/schemas.py Record.alternatives)")
    url, settings, test = served
    offered = None
    for t in [t for t in test if t.language == "en" and not is_clarification(t.answer)][:12]:
        if ask(url, t.query).json().get("alternatives"):
            offered = t.query
            break
    assert offered, "no test question was given alternatives"
    open_page(page, url)
    ask_in_page(page, offered)
    request_id = assert_replied(page)
    page.click("#bad")
    page.wait_for_selector("#alternatives:not([hidden])")
    items = page.locator("#alternatives-list .alternative")
    assert items.count() >= 1 and all(t.startswith("Did you mean") for t in page.locator(".alternative .reading").all_inner_texts())
    page.wait_for_function("[...document.querySelectorAll('.alternative .alt-answer')].every((a) => a.textContent !== 'answering…')",
                           timeout=ANSWER_S * 1000)
    assert not page.locator(".alternative .alt-answer.failed").count()  # each reading answered, none refused
    shoot(page, "didyoumean")
    choice = items.first.get_attribute("data-combination")
    items.first.locator(".pick").click()
    page.wait_for_selector("#feedback-status:has-text('with the reading you picked')")
    records = read_until(log_broker[-1].bootstrap, settings.kafka.feedback_topic,
                         lambda rs: request_id in {Feedback.decode(r.value).request_id for r in rs})
    mine = [Feedback.decode(r.value) for r in records if Feedback.decode(r.value).request_id == request_id]
    assert [(f.verdict, f.choice) for f in mine] == [("bad", choice)]


# --- the page's endpoints over HTTP ------------------------------------------------------------------

@pytest.mark.parametrize(
    "body",
    [{"query": ""}, {"query": "   "}, {"query": "x" * 1_000_000}, {"query": 42}, {"query": ["who"]}, {"question": "who?"},
     {"query": "who?", "extra": 1}, {"query": "x" * 5000}],
)  # fmt: skip
def test_the_stream_refuses_bad_input_as_the_api_does(served, body):
    url, _, _ = served
    api = httpx.post(f"{url}/v1/ask", json=body, headers=AUTH, timeout=30)
    stream = httpx.post(f"{url}/v1/ask/stream", json=body, headers=AUTH, timeout=30)
    assert 400 <= api.status_code < 500
    assert (stream.status_code, stream.json()["error"]) == (api.status_code, api.json()["error"])


def test_page_files_are_public_and_its_data_needs_the_key(served):
    url, _, _ = served
    for path in ("/", "/library", "/live", "/page.json", "/static/app.js", "/static/app.css"):
        assert httpx.get(f"{url}{path}", timeout=30).status_code == 200, path
    assert httpx.get(f"{url}/page.json", timeout=30).json()["api_key_required"] is True
    for path in ("/static/missing.js", "/static/%2e%2e/page.py", "/static/%2e%2e/%2e%2e/serving/page.py"):  # no way out of serving/web/static
        assert httpx.get(f"{url}{path}", timeout=30).status_code == 404, path
    assert httpx.get(f"{url}/v1/library", timeout=30).status_code == 401
    assert httpx.post(f"{url}/v1/ask/stream", json={"query": "who?"}, timeout=30).status_code == 401
    malformed = httpx.post(f"{url}/v1/ask/stream", content=b'{"query": ', headers={**AUTH, "content-type": "application/json"}, timeout=30)
    assert malformed.status_code == 400 and "json" in malformed.json()["error"].lower()
    library = httpx.get(f"{url}/v1/library", headers=AUTH, timeout=30).json()
    assert library["solutions"] and all(c["examples"] for s in library["solutions"] for c in s["combinations"])


def test_the_stream_sends_each_stage_then_the_record(served):
    url, _, test = served
    with httpx.stream("POST", f"{url}/v1/ask/stream", json={"query": test[0].query}, headers=AUTH, timeout=ANSWER_S) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert [e.get("stage") for e in events[:-1]] == ["retrieve", "plan", "code", "execute", "answer"]
    record = events[-1]["record"]
    assert events[-1]["type"] == "record" and record["request_id"] == response.headers["x-request-id"]
    assert (events[1]["solution"], events[2]["code"], events[4]["answer"]) == (record["solution"], record["code"], record["answer"])
    assert {e["stage"]: e["seconds"] for e in events[:-1]} == record["timings"]


# --- no broker ---------------------------------------------------------------------------------------

def test_without_a_broker_the_log_stream_warns_once_keeps_every_record_and_delivers_once_one_appears(caplog, tmp_path):
    """The ingress's log stream, configured as the ingress configures it, against a port nobody
    listens on while requests keep being logged: one warning line in all, every record kept in the
    outbox (counted in the service's /metrics registry); a broker started on that port then gets them all."""
    from cluster.broker import start_broker
    from serving.logstream import open_log_stream
    from serving.metrics import PipelineMetrics
    from soay.logs import RequestLog
    from soay.settings import Settings

    caplog.set_level(logging.DEBUG)  # everything any logger lets through is seen
    port = free_port()
    settings = Settings(data={"root": tmp_path}, kafka={"bootstrap_servers": f"127.0.0.1:{port}"})
    metrics = PipelineMetrics()
    stream = open_log_stream(settings.kafka, settings.kafka.outbox_path(settings.data), metrics.registry)
    ids = []
    try:
        for n in range(50):  # 10 s of traffic, 5 records a second; the stream gives up on a bootstrap after 5 s
            ids.append(f"no-broker-{n}")
            stream.log_request(RequestLog(request_id=ids[-1], endpoint="/v1/ask", query=f"question {n}", status="ok"))
            time.sleep(0.2)
        noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r.getMessage().split(";")[0] for r in noisy] == [f"request log not shipped yet: no broker at 127.0.0.1:{port}"], noisy
        assert "start `soay broker` or set kafka.bootstrap_servers" in noisy[0].getMessage()
        assert not [r for r in caplog.records if r.name.startswith("kafka")]
        assert stream.outbox.count() == len(ids)
        assert "soay_log_outbox_records" in metrics.render().decode()

        broker = start_broker(port=port)
        try:
            records = read_until(broker.bootstrap, settings.kafka.requests_topic, lambda rs: len(rs) >= len(ids))
            assert {RequestLog.decode(r.value).request_id for r in records} == set(ids)
        finally:
            stream.close()  # before the broker goes: its going is no news
            broker.stop()
    finally:
        stream.close()
