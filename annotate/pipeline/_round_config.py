"""The label config a round records and sends (``route``): the workspace's, without the dialogue or the image
the round's responses do not have, and with the hazard questions where the lead asks (``--ask-hazards``).

A routed round keeps what it was routed with: the workspace's config must still give exactly that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotate.errors import InputError, StateError
from annotate.hazards import OFFERABLE_CODE, codes, hazard_of, taxonomy
from annotate.labelstudio.labelconfig import (
    HAZARD_CONTROL,
    SEVERITY_CONTROL,
    LabelConfig,
    asks_hazards,
    choice_code,
    parse_label_config,
    round_label_config,
    with_hazard_questions,
)

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.pipeline.session import Session

__all__ = ["hazard_list", "recorded_hazards", "round_config"]


def round_config(
    s: Session,
    round_name: str,
    existing: dict[str, Any] | None,
    workspace: LabelConfig,
    *,
    transcripts: int,
    images: int = 0,
    ask_hazards: bool = False,
) -> LabelConfig:
    """The config the round records and sends: with the dialogue when its responses have transcripts.

    ``transcripts``: how many responses of the wave being routed have one. A new round shows
    dialogues when any has; a routed round keeps what it was routed with (the workspace's config
    must still give exactly that). ``images``: likewise for the items' images.
    """
    path = s.ws.label_config_path
    if existing is None:
        dialogue, image, hazards = transcripts > 0, images > 0, ask_hazards
    else:
        recorded = parse_label_config(existing["label_config"], source=f"round {round_name} label config")
        dialogue, image, hazards = recorded.dialogue is not None, recorded.image is not None, asks_hazards(recorded)
        if ask_hazards and not hazards:
            raise StateError(
                f"round {round_name!r} was routed without hazard questions and keeps its label config (its reviewers "
                "answer one page); route a new round with --ask-hazards for them."
            )
        if not image and images:
            raise StateError(
                f"{images} of the responses ingested since round {round_name!r} was last routed have an image, but "
                "the round was routed without images and keeps its label config; route them in a new round, "
                "whose tasks will show the images."
            )
        if not dialogue and transcripts:
            raise StateError(
                f"{transcripts} of the responses ingested since round {round_name!r} was last routed have whole "
                "transcripts (multi-turn or agentic), but the round was routed without dialogues and keeps its "
                "label config; route them in a new round, whose tasks will show the conversations."
            )
    if dialogue and workspace.dialogue is None:
        raise InputError(
            f"{path}: {transcripts} responses to route have whole transcripts (multi-turn or agentic), but the "
            'label config shows no dialogue (<Paragraphs name="dialogue" value="$dialogue" layout="dialogue"/>), '
            "so reviewers would see only the first prompt and the final answer. Add the ls-dialogue block of "
            "annotate's default config (label_config.xml in a workspace made by `annotate init`) and route again.",
        )
    if image and workspace.image is None:
        raise InputError(
            f"{path}: {images} responses to route have an image, but the label config shows none "
            '(<Image name="image" value="$image"/>), so reviewers would judge them without it. Add the ls-media '
            "block of annotate's default config (label_config.xml in a workspace made by `annotate init`) and "
            "route again.",
        )
    xml = round_label_config(workspace.xml, dialogue=dialogue, image=image)
    taken = [c for c in (HAZARD_CONTROL, SEVERITY_CONTROL) if c in workspace.controls]
    if hazards and taken:
        raise InputError(
            f"{path}: the label config already has a control named {taken[0]!r}, the name annotate gives the hazard "
            "questions of --ask-hazards; rename yours (or route without --ask-hazards)."
        )
    if hazards:  # the same list for every item: the item's own hazard is never shown
        xml = with_hazard_questions(xml, hazard_list(s.store) if existing is None else recorded_hazards(recorded))
    config = parse_label_config(xml, source=str(path))
    if existing is not None and existing["label_config_sha"] != config.sha256:
        raise StateError(
            f"label_config.xml changed since round {round_name!r} was routed; restore it "
            "or start a new round (a round's tasks must share one config)."
        )
    return config


def hazard_list(store: Store) -> list[tuple[str, str]]:
    """The hazard choices a new round's page offers: AILuminate's twelve (code, name), then the other codes
    the stored responses carry (a team's own, offered as themselves; a code of other characters than
    letters, digits, ``_ . -`` is left out)."""
    tax = taxonomy()
    stored = {hazard_of(c, tax) for value in store.responses(["hazard"])["hazard"].dropna() for c in codes(value)}
    own = sorted(c for c in stored - set(tax.hazards) if OFFERABLE_CODE.match(c))
    return [*((code, name) for code, (name, _group) in tax.hazards.items()), *((c, c) for c in own)]


def recorded_hazards(config: LabelConfig) -> list[tuple[str, str]]:
    """The hazard choices a routed round's page offers, from its recorded config (kept for its later waves)."""
    out = []
    for choice in config.controls[HAZARD_CONTROL].choices:
        code = choice_code(choice)
        if code is not None:
            out.append((code, choice[: -len(code) - 3] if choice != code else code))
    return out
