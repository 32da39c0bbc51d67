"""A label config that would hand model output to the reviewer's browser as a URL is refused (issue #22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.errors import InputError
from annotate.labelstudio.labelconfig import parse_label_config

CONFIG = (Path(__file__).resolve().parents[2] / "label_config.xml").read_text(encoding="utf-8")


def test_the_default_config_passes():
    assert parse_label_config(CONFIG).dialogue == "dialogue"


@pytest.mark.parametrize(
    "change, says",
    [
        (('<Text name="response" value="$response"', '<Text name="response" value="$response" valueType="url"'), "URL"),
        (('<Text name="prompt" value="$prompt"', '<Text name="prompt" value="$prompt" valueType="URL"'), "URL"),
        (
            (
                '<Text name="response" value="$response" granularity="word"/>',
                '<Text name="response" value="$response" granularity="word"/><Audio name="a" value="$x" '
                'audioUrl="$response"/>',
            ),
            "audioUrl",
        ),
        (
            (
                '<Text name="response" value="$response" granularity="word"/>',
                '<Text name="response" value="$response" granularity="word"/>'
                '<Image name="i" value="$x" src="$prompt"/>',
            ),
            "src",
        ),
    ],
)
def test_model_output_is_never_a_url(change, says):
    old, new = change
    assert old in CONFIG, old
    with pytest.raises(InputError, match=says):
        parse_label_config(CONFIG.replace(old, new, 1))
