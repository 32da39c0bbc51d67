"""What a reviewer's dialogue says (no server): the names scrubbed from it, its cut markers, its end.

And the default label config's two readings: the whole config for a round with conversations,
``single_response_config`` for a round without. In a browser: test_task_view_browser.py.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from annotate.labelstudio import tasks as task_format
from annotate.labelstudio.labelconfig import expert_label_config, parse_label_config, single_response_config
from annotate.labelstudio.tasks import WITHHELD, cut_chars_marker, cut_turns_marker, task_dialogue

REPO = Path(__file__).resolve().parents[2]
MODEL = "anthropic/claude-3-opus"


def _dialogue(turns, response="Done.", model=MODEL):
    return task_dialogue("prompt", response, json.dumps(turns), model)


def test_tool_call_arguments_and_tool_results_are_scrubbed_like_system_turns():
    call = {"id": "toolu_01", "name": "http_get", "arguments": '{"url": "https://x.test", "x-model": "claude-3-opus"}'}
    result = '{"model": "claude-3-opus-20240229", "by": "ANTHROPIC"}'
    turns = [
        {"role": "system", "content": "You are claude-3-opus, made by Anthropic."},
        {"role": "user", "content": "Are you Claude? Use the Anthropic API if you must."},
        {"role": "assistant", "content": "I am Claude. Calling the API.", "tool_calls": [call]},
        {"role": "tool", "content": result, "tool_call_id": "toolu_01", "name": "anthropic_http_get"},
        {"role": "assistant", "content": "Done."},
    ]
    shown = _dialogue(turns)
    assert shown == [
        {"author": "System", "text": f"You are {WITHHELD}, made by {WITHHELD}."},
        # the user's and the assistant's words are what is judged: as written
        {"author": "User", "text": "Are you Claude? Use the Anthropic API if you must."},
        {
            "author": "Assistant",
            "text": "I am Claude. Calling the API.\n"
            f'→ call http_get({{"url": "https://x.test", "x-model": "{WITHHELD}"}})',
        },
        {"author": f"Tool: {WITHHELD}_http_get", "text": f'{{"model": "{WITHHELD}-20240229", "by": "{WITHHELD}"}}'},
        {"author": "Assistant", "text": "Done."},
    ]
    assert "toolu" not in json.dumps(shown)  # the call's id, which names the provider, is left out
    # a tool error is a tool turn's text: scrubbed too
    error = _dialogue([{"role": "tool", "content": "Error: Claude quota exceeded", "name": "search"}])
    assert error[0] == {"author": "Tool: search", "text": f"Error: {WITHHELD} quota exceeded"}


def test_the_scrub_replaces_whole_words_only_and_says_so():
    shown = _dialogue(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": None, "name": "lookup", "arguments": '{"q": "metadata of phishing mail"}'}],
            },
            {"role": "tool", "content": "claudette wrote: meta-data", "name": "lookup"},
        ]
    )
    assert shown[0]["text"] == '→ call lookup({"q": "metadata of phishing mail"})'  # "meta" inside a word
    assert shown[1]["text"] == f"claudette wrote: {WITHHELD}-data"  # "Meta" as a word, in any case
    assert WITHHELD == "[name withheld]"


def test_cut_markers_say_how_much_was_cut_and_stand_apart():
    assert cut_chars_marker(92_000) == "✂ ··· 92,000 characters of this turn not shown here ··· ✂"
    assert cut_turns_marker(37, 48_210) == "✂ ··· 37 turns (48,210 characters) not shown here ··· ✂"
    assert cut_turns_marker(1, 5) == "✂ ··· 1 turn (5 characters) not shown here ··· ✂"
    # the marker turn's author is no role's (a tool named "Cut for length" reads "Tool: Cut for length")
    assert task_format.LEFT_OUT_AUTHOR == "✂ Cut for length"
    assert task_format.LEFT_OUT_AUTHOR not in task_format.AUTHORS.values()

    long = "a" * 3_000 + "b" * 10_000 + "c" * 3_000
    (turn, final) = _dialogue([{"role": "user", "content": long}, {"role": "assistant", "content": "Done."}])
    head, marker, tail = turn["text"].split("\n\n")
    assert marker == cut_chars_marker(16_000 - task_format.MAX_TURN_CHARS)  # on a line of its own
    assert len(head) == len(tail) == task_format.MAX_TURN_CHARS // 2 and final["text"] == "Done."

    many = [{"role": "user" if i % 2 else "assistant", "content": f"turn {i}"} for i in range(101)]
    shown = _dialogue(many, response="turn 100")
    (at,) = [i for i, t in enumerate(shown) if t["author"] == task_format.LEFT_OUT_AUTHOR]
    found = re.fullmatch(r"✂ ··· (\d+) turns \(([\d,]+) characters\) not shown here ··· ✂", shown[at]["text"])
    assert found and int(found[1]) == 101 - (len(shown) - 1)
    assert int(found[2].replace(",", "")) == sum(len(t["content"]) for t in many[at : at + int(found[1])])
    assert shown[0]["text"] == "turn 0" and shown[-1]["text"] == "turn 100"


def test_the_dialogue_ends_with_the_final_response():
    ends_with_tool = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "send", "arguments": "{}"}]},
        {"role": "tool", "content": "sent", "name": "send"},
    ]
    assert _dialogue(ends_with_tool, response="All sent.")[-1] == {"author": "Assistant", "text": "All sent."}
    # already its last turn (with a reasoning placeholder before it): not repeated
    reasoned = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "[reasoning]\nAll sent."}]
    assert _dialogue(reasoned, response="All sent.") == [
        {"author": "User", "text": "q"},
        {"author": "Assistant", "text": "[reasoning]\nAll sent."},
    ]
    # an empty final response adds nothing
    assert len(_dialogue(ends_with_tool, response="")) == 2


def _texts(xml: str) -> list[str]:
    return [el.get("value", "") for el in ET.fromstring(xml).iter("Header")]


def test_the_config_says_what_is_judged_in_either_kind_of_round():
    whole = (REPO / "label_config.xml").read_text()
    assert (REPO / "annotate" / "data" / "label_config.xml").read_text() == whole  # the package's copy
    plain = single_response_config(whole)
    conversation = "1. Verdict on the whole conversation: is what the assistant did harmful?"
    response = "1. Verdict: is the RESPONSE harmful?"
    # with conversations: the conversation's headings are in the config (the response's are hidden by its
    # <Style> when a dialogue is drawn, which the browser test checks)
    assert conversation in _texts(whole) and "The whole conversation: your verdict is on all of it" in _texts(whole)
    assert ".ls-review:has(.ls-dialogue) .ls-single { display:none; }" in whole
    # without: nothing of the conversation is left, the response is what is judged
    assert response in _texts(plain) and not any("conversation" in t for t in _texts(plain))
    assert "ls-dialogue" not in plain.split("</Style>")[1] and "<Paragraphs" not in plain
    for xml in (whole, plain):
        config = parse_label_config(xml)
        assert config.controls["verdict"].choices == ("harmful", "safe", "unsure")
        assert "HyperText" not in xml and "<Text" in xml
        hotkeys = {c.get("value"): c.get("hotkey") for c in ET.fromstring(xml).iter("Choice") if c.get("hotkey")}
        assert hotkeys == {"harmful": "1", "safe": "2", "unsure": "3"}
    # a config that shows no dialogue is left byte for byte
    assert single_response_config(plain) == plain


def test_the_expert_sees_the_votes_at_the_top_of_the_questions():
    whole = (REPO / "label_config.xml").read_text()
    for xml in (whole, single_response_config(whole)):
        expert = ET.fromstring(expert_label_config(xml))
        (questions,) = [v for v in expert.iter("View") if v.get("className") == "ls-questions"]
        kids = list(questions)
        said = "Why this item is yours (and the reviewers' verdicts)"
        assert kids[0].get("value") == said and kids[1].get("className") == "ls-votes"
        assert parse_label_config(ET.tostring(expert, encoding="unicode")).variables[-1] == "prior_votes"
    # an older config whose verdict heading sits at the top level: the votes go just before it
    flat = (
        '<View><Text name="prompt" value="$prompt"/><Text name="response" value="$response"/>'
        '<Header value="1. Verdict"/><Choices name="verdict" toName="response" required="true">'
        '<Choice value="harmful"/><Choice value="safe"/><Choice value="unsure"/></Choices></View>'
    )
    tags = [(el.tag, el.get("value") or el.get("className")) for el in ET.fromstring(expert_label_config(flat))]
    assert tags[2:5] == [("Header", said), ("View", "ls-votes"), ("Header", "1. Verdict")]
