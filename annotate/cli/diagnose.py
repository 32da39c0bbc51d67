"""`annotate diagnose`: does the judge's "ambiguous" track style rather than safety?"""

from __future__ import annotations

from typing import Any

import click

from annotate.cli._format import ci, num, table
from annotate.cli._options import echo_json, open_session, workspace_options


@click.command()
@click.option("--judge", default=None, help="Whose ambiguity to explain (needed when the store has several judges).")
@click.option("--by", "by", type=click.Choice(["benchmark"]), default=None, help="Also fit per benchmark.")
@click.option(
    "--null-band",
    default="0.9,1.1",
    show_default=True,
    help="Odds ratios per SD inside this band are negligible, whatever their p-value.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the cross-validation folds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def diagnose(ctx: click.Context, judge: str | None, by: str | None, null_band: str, seed: int, as_json: bool) -> None:
    """Does the judge's "ambiguous" track style rather than safety here? The study's six correlates.

    Logistic regression of "judge said ambiguous" on standardised text features (length,
    lexical density, sophistication, perplexity, self-coherence, reply-prompt similarity) with
    model and benchmark fixed effects and prompt-clustered standard errors: odds ratio per SD
    with 95 % interval, Holm-adjusted p, VIF, and cross-validated AUC of the features alone
    against the fixed effects alone. Where human labels exist, the same features against
    human-harmful among judge-ambiguous responses. Features are computed once and stored (needs
    the `diagnostics` extra). Exports made afterwards carry a diagnostics section.

    \b
    Example:
      annotate diagnose
      annotate diagnose --by benchmark --json
    """
    from annotate.errors import InputError
    from annotate.pipeline.diagnose import diagnose as do_diagnose

    try:
        lo, hi = (float(x) for x in null_band.split(","))
    except ValueError:
        raise InputError("--null-band must be two numbers, e.g. 0.9,1.1") from None
    try:
        with open_session(ctx) as s:
            result = do_diagnose(s.store, judge=judge, by=by, null_band=(lo, hi), seed=seed)
    except ImportError as exc:
        raise InputError(f"{exc}. Install the diagnostics extra: pip install 'annotate[diagnostics]'") from None
    if as_json:
        echo_json(result)
        return

    def show(res: dict[str, Any], title: str) -> None:
        click.echo(
            f"{title}: n = {res['n_responses']}, events = {res['n_events']}; "
            f"AUC features {num(res['auc_features'])} vs fixed effects {num(res['auc_fixed_effects'])}"
        )
        click.echo(
            table(
                ["correlate", "feature", "OR/SD", "95% CI", "Holm p", "VIF", "reading"],
                [[r.get("correlate") or "", r["feature"], *(_estimable(r)), r["verdict"]] for r in res["table"]],
                align="llrrrrl",
            )
        )

    show(result, f"Judge {result['judge']}: said ambiguous")
    click.echo("The study's correlates here:")
    for r in result["study"]:
        click.echo(f"  {r['correlate']:16s} ({r['feature']}) expected to {r['expected']}: {r['holds']}")
    for b in result.get("by_benchmark", []):
        if "error" in b:
            click.echo(f"{b['benchmark']}: {b['error']}")
        else:
            show(b, f"Benchmark {b['benchmark']}")
    human = result.get("human")
    if human and "error" not in human:
        show(human, "Human-adjudicated harmful among judge-ambiguous responses")
    elif human:
        click.echo(f"Human labels: {human['error']}")


def _estimable(r: dict[str, Any]) -> list[str]:
    """OR, CI, Holm p and VIF, or dashes when the fit could not estimate them."""
    if str(r.get("verdict", "")).endswith("not estimable"):
        return ["-", "", "-", "-"]
    return [
        num(r["odds_ratio"]),
        ci(r["ci_low"], r["ci_high"]),
        num(r["p_holm"], "{:.3g}"),
        num(r["vif"], "{:.1f}"),
    ]
