"""`annotate glossary`: the words the outputs use, in plain terms."""

from __future__ import annotations

import click

from annotate.cli._format import say
from annotate.cli._options import echo_json

GUIDE = "docs/guide.md#glossary"


@click.command("glossary")
@click.argument("terms", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: each entry's name, aliases and text.")
def glossary(terms: tuple[str, ...], as_json: bool) -> None:
    """What a word on annotate's screens means: a table header, a verdict, a figure.

    With no TERM, every entry; with one or more, those (by name or any form the outputs print,
    case ignored: `95% CI`, `DS sens.`, `q`). The same entries are the glossary of
    docs/guide.md.

    \b
    Example:
      annotate glossary
      annotate glossary AC1 "unsure out" q
      annotate glossary --json
    """
    from annotate.errors import InputError
    from annotate.glossary import TERMS, close_matches, lookup

    chosen = []
    for word in terms:
        term = lookup(word)
        if term is None:
            near = close_matches(word)
            hint = f" Did you mean: {', '.join(near)}?" if near else ""
            raise InputError(f"no glossary entry for {word!r}.{hint} `annotate glossary` lists them all.")
        if term not in chosen:
            chosen.append(term)
    shown = chosen or sorted(TERMS, key=lambda t: t.name.lower())
    if as_json:
        echo_json([{"name": t.name, "aliases": list(t.aliases), "text": t.text} for t in shown])
        return
    for i, term in enumerate(shown):
        if i:
            click.echo("")
        also = f" (also: {', '.join(term.aliases)})" if term.aliases else ""
        say(f"{term.name}{also}", indent="    ")
        say(term.text, indent="  ", first="  ")
    if not chosen:
        click.echo("")
        click.echo(f"The same, with links: {GUIDE}")
