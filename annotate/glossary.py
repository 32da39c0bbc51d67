"""The words annotate's outputs use, each explained once for a lead who has not read the methods.

One source for three readers: ``annotate glossary [TERM]`` prints entries, docs/guide.md's
"Glossary" section is generated from them (``docs/generate_glossary.py``; tests/cli/test_docs.py
keeps it current), and tests/cli/test_glossary.py checks that every column header the README's
round prints has an entry here or is a plain word. A term is found by its name or any alias,
ignoring case.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    text: str
    aliases: tuple[str, ...] = ()
    see: tuple[str, ...] = ()


def _t(name: str, text: str, aliases: tuple[str, ...] = (), see: tuple[str, ...] = ()) -> Term:
    return Term(name, " ".join(text.split()), aliases, see)


#: In the order a round meets them (the guide lists them so); ``annotate glossary`` sorts by name.
TERMS: tuple[Term, ...] = (
    # -- the judge's verdicts and the round's design ------------------------------------------------
    _t(
        "ambiguous",
        "A response the automated judge could not call harmful or safe: it said so, or its verdict could not be "
        "read (ingest counts those as 'unparsed'). Reviewers see these first.",
        ("ambiguous responses",),
    ),
    _t(
        "stratum",
        "The responses of one model and benchmark that the judge put in the same bin (harmful, safe or "
        "ambiguous). Each stratum is sampled on its own, so a rate can be estimated for the whole stratum from "
        "the reviewed part.",
        ("strata", "ambiguous stratum"),
        ("clear stratum", "inclusion probability"),
    ),
    _t(
        "clear stratum",
        "A stratum the judge was sure about (harmful or safe). A seeded sample of it is reviewed too, because "
        "the judge's clear verdicts are also wrong sometimes.",
        ("clear", "clear strata"),
    ),
    _t(
        "population",
        "How many responses a stratum holds: what the reviewed sample stands for.",
    ),
    _t(
        "inclusion probability",
        "The chance a response of its stratum had of being picked for review (selected / population). Each "
        "reviewed response then counts for 1 / that many responses in the corrected rates.",
        ("incl. prob", "inclusion prob"),
    ),
    _t(
        "wave",
        "One batch of routing in a round. A later wave (route --next-wave) adds reviews where the first left "
        "the intervals too wide.",
    ),
    _t(
        "pseudonym",
        "The name a reviewer has in the workspace and every output (A1, A2, ...; experts E1, ...). Their "
        "e-mail stays in the store only.",
    ),
    _t(
        "blinding",
        "Reviewers do not see the model, the judge's verdict or each other's labels. On annotate's own servers "
        "that is enforced; with task files it rests on the instructions, and the export says which.",
    ),
    # -- reviewers' progress and agreement ------------------------------------------------------------
    _t(
        "median time",
        "The median seconds a reviewer spent per task, as Label Studio records it (lead_time).",
    ),
    _t(
        "ETA",
        "The time a reviewer needs for their remaining tasks at their median time per task.",
    ),
    _t(
        "kappa",
        "Cohen's kappa: agreement between two sets of labels beyond what chance would give; 1 is perfect, 0 is "
        "chance. In status it is each reviewer against the majority of the others; in judges, the judge "
        "against the final human label.",
        ("cohen's kappa", "kappa with the others", "Cohen's κ"),
    ),
    _t(
        "alpha",
        "Krippendorff's alpha: how far the reviewers agree beyond chance, for any number of reviewers and "
        "missing labels; 1 is perfect, 0 is chance. Read it with its interval.",
        ("krippendorff's alpha", "alpha (3-way)"),
        ("verdict",),
    ),
    _t(
        "units",
        "The items at least two reviewers labelled: the ones agreement can be measured on. (In plan's table, "
        "'items' are the responses the next wave would route.)",
        ("items",),
    ),
    _t(
        "3-way",
        "Agreement on the labels as collected: harmful, safe and unsure each a category. The headline figure.",
        ("3-way labels",),
    ),
    _t(
        "binary",
        "Agreement with the unsure votes left out: only the items reviewers were sure about. Usually higher "
        "than 3-way; 'unsure out' says how much was left out.",
        ("binary labels",),
    ),
    _t(
        "unsure out",
        "How many unsure votes the binary figure left out, and their share of all votes.",
    ),
    _t(
        "AC1",
        "Gwet's AC1, an agreement coefficient that stays steady when one label dominates (most responses safe), "
        "where alpha and kappa drop although the reviewers rarely disagree (the 'kappa paradox', marked !).",
        ("gwet's ac1", "!", "kappa paradox"),
    ),
    _t(
        "% agree",
        "The plain share of agreeing labels, with no allowance for chance: in agreement's table, of reviewer "
        "pairs on an item; in its per-reviewer table ('agree'), of a reviewer's labels equal to the other "
        "reviewers' majority; in judges' pair table, of responses two judges labelled alike.",
        ("percent agreement", "agree", "agreement", "agreement %"),
    ),
    _t(
        "verdict",
        "Krippendorff's reading of alpha, on the lower end of its interval: 'reliable' at 0.800 or above, "
        "'tentative only' from 0.667, 'unreliable' below. 'no interval' or 'undefined': the data cannot give "
        "one (too few items, all one label, or every resample agreed), and the note under the table says why.",
        ("reliable", "tentative only", "unreliable", "undefined", "no interval"),
    ),
    _t(
        "P(a<.667)",
        "The probability, from the bootstrap, that the true alpha is below 0.667, Krippendorff's lowest "
        "threshold for tentative conclusions (agreement --wide).",
    ),
    _t(
        "Fleiss",
        "Fleiss' kappa, on the items every reviewer labelled (agreement --wide).",
        ("fleiss' kappa", "Fleiss κ"),
    ),
    _t(
        "alpha w/o",
        "The pooled alpha with this reviewer left out; 'delta' is how much it changes. A reviewer whose removal "
        "raises alpha a lot labels unlike the others. Needs at least three reviewers.",
        ("delta",),
    ),
    _t(
        "Dawid-Skene",
        "A model that estimates each reviewer's error rates and each item's most likely label from all the "
        "labels at once. 'DS sens.' is how often a reviewer calls a harmful item harmful, 'DS spec.' a safe "
        "one safe. It needs items shared by three reviewers.",
        ("DS", "DS sens.", "DS spec.", "DS labels"),
    ),
    _t(
        "gold acc.",
        "A reviewer's accuracy on items with a known answer (gold items), where there are any.",
        ("gold accuracy", "gold"),
    ),
    _t(
        "flags",
        "What stands out about a reviewer: in status, 'fast' (much quicker per task than the others) or 'low "
        "agreement' (the whole interval of their kappa with the others' majority below 0.6 and below every "
        "other reviewer's interval); in agreement, a kappa "
        "with the consensus below 0.6, or an alpha that rises by more than 0.05 without them ('alpha w/o - "
        "alpha'); 'ok' when nothing does. In score's wide table, 'flag' says why a model's row needs care.",
        ("flag",),
    ),
    # -- adjudication ---------------------------------------------------------------------------------
    _t(
        "majority",
        "An item is settled by the reviewers' majority when enough of them were sure and agreed "
        "([adjudication] in annotate.toml).",
        ("majority vote",),
    ),
    _t(
        "escalated",
        "Sent to the expert: a tie, an unsure majority, or too few sure votes.",
        ("escalation",),
    ),
    _t(
        "unresolved",
        "An item neither the majority nor the expert settled. The corrected rates treat it as missing at random "
        "and the bounds show it all safe and all harmful.",
    ),
    _t(
        "majority check",
        "A seeded sample of majority-settled items also sent to the expert: how often the expert agrees with "
        "the majority.",
    ),
    # -- scores -----------------------------------------------------------------------------------------
    _t(
        "n/e",
        "Not estimable: no reviewed response, and none to borrow from, so no number is printed; the note says why.",
        ("not estimable",),
    ),
    _t(
        "pooled (mixture)",
        "Agreement over every reviewed item at once, the strata mixed as they were sampled (the ambiguous "
        "over-sampled), not weighted to the population.",
        ("mixture", "pooled"),
    ),
    _t(
        "posterior",
        "What the data say about a figure, as draws (4,000 by default): intervals, ranks and probabilities "
        "are read off the same draws, so they agree with each other.",
        ("posterior draws",),
    ),
    _t(
        "target",
        "plan: the half-width (+-) wanted for each model's corrected rate; 'now +-' is the half-width today, "
        "'after +-' the one expected after the planned wave, 'reviews' the labels it takes.",
        ("now +-", "after +-", "half-width", "+-"),
    ),
    _t(
        "corrected",
        "The harmful rate after review: each stratum's rate estimated from its reviewed responses, weighted by "
        "its population, so the judge's errors in clear strata are corrected too. The figure the audit is for.",
        ("corrected rate", "corrected harmful rate"),
    ),
    _t(
        "interval",
        "The range the true value is expected in, 95 times out of 100: from posterior draws for scores and "
        "judges, from a bootstrap for agreement (for a reviewed hazard category, the bootstrap's joined with a "
        "posterior one, which keeps its promise when the category is rare). It is not centred on the estimate: "
        "with few reviewed responses, "
        "or a rate near 0 or 1, it leans toward the middle. A 0.0 % with a wide interval: no resolved reviewed "
        "response was harmful, and the width is the room left by unresolved items (see bounds), by too few "
        "reviews, or, with --estimand prompts, by the prompts being a sample.",
        ("95% CI", "95 % interval", "CI", "confidence interval", "rank CI"),
    ),
    _t(
        "estimand",
        "What a figure describes. 'responses' (the default): these responses to these prompts. 'prompts': "
        "the model on prompts like these, so the prompts themselves are a sample and the intervals are wider.",
        ("responses", "prompts"),
    ),
    _t(
        "macro-average",
        "The mean over benchmarks, each counting once whatever its size.",
        ("overall",),
    ),
    _t(
        "bounds",
        "The corrected rate with every unresolved item counted safe, and with every one counted harmful: the "
        "corrected figure lies between them whatever the unresolved items are.",
        (
            "partial identification",
            "all unresolved safe",
            "all unresolved harmful",
            "bounds (unresolved safe..harmful)",
        ),
    ),
    _t(
        "missing at random",
        "The assumption that unresolved items are harmful as often as resolved ones of their stratum (MAR).",
        ("MAR",),
    ),
    _t(
        "rank",
        "A model's place by harmful rate, 1 the lowest; a tie shares the mean place (1.5). 'rank CI' is its "
        "95 % range over the posterior draws. 'rank (MAR)' is the rank with unresolved items missing at random. "
        "In judges, a judge's place by balanced accuracy, 1 the highest.",
        ("rank (MAR)",),
    ),
    _t(
        "judge alone",
        "The model's harmful rate by the judge's verdicts, its ambiguous ones left out: what a leaderboard "
        "without review would print.",
    ),
    _t(
        "treatment",
        "One way of counting the ambiguous responses: the judge's labels with ambiguous as safe, as harmful or "
        "left out; review of the ambiguous ones only; or the corrected rates with unresolved items safe, "
        "harmful, or with every reviewed item's label from Dawid-Skene instead of majority and expert. 'score "
        "--wide' prints each (amb=safe, amb=harm, amb excl, clear trusted, unres=safe, unres=harm, DS labels).",
        (
            "treatments",
            "amb.=safe",
            "amb.=harmful",
            "amb=safe",
            "amb=harm",
            "amb excl",
            "clear trusted",
            "unres=safe",
            "unres=harm",
        ),
    ),
    _t(
        "max shift",
        "The most places a model moves between treatments.",
        ("shift",),
    ),
    _t(
        "flipped pair",
        "Two models in the other order under a treatment than under the corrected rates.",
        ("flips", "flipped pairs"),
    ),
    _t(
        "credible",
        "A flip is credible when the corrected posterior puts the two models in that order with probability "
        "0.975 or more; otherwise it is 'within noise': the data cannot tell the two apart.",
        ("within noise", "credible flip"),
    ),
    _t(
        "tau-b, rho",
        "Rank correlations between a treatment's ranking and the corrected one (Kendall's tau-b, Spearman's "
        "rho): 1 is the same order.",
        ("tau-b", "rho", "Kendall τ-b", "Spearman ρ"),
    ),
    _t(
        "P =",
        "A probability from the posterior draws: in score, that one model is safer than another; in judges, "
        "P(A better) that judge A's balanced accuracy is higher than B's, P(best) that a judge's is the highest.",
        ("P(A better)", "P(B better)", "P(best)"),
    ),
    _t(
        "pooled correction",
        "A correction that uses the judge's error rates pooled over all models (Rogan-Gladen); shown beside the "
        "corrected rates when the judge errs differently for some models.",
        ("Rogan-Gladen",),
    ),
    _t(
        "transport",
        "A stratum with no reviewed response borrows the judge's error rates from similar cells (donors); the "
        "bounds then cover every assignment of their unresolved items.",
        ("donors",),
    ),
    # -- judges ---------------------------------------------------------------------------------------
    _t(
        "sensitivity",
        "How often the judge calls harmful a response the reviewers found harmful.",
        ("sens.",),
    ),
    _t(
        "specificity",
        "How often the judge calls safe a response the reviewers found safe.",
        ("spec.",),
    ),
    _t(
        "bal. acc.",
        "Balanced accuracy: the mean of sensitivity and specificity, so a judge cannot score well by calling "
        "everything safe.",
        ("balanced accuracy", "BA A - B"),
    ),
    _t(
        "PPV, NPV",
        "Of the responses the judge called harmful, the share that were (PPV); of those it called safe, the "
        "share that were (NPV).",
        ("PPV", "NPV"),
    ),
    _t(
        "where two judges disagree",
        "judges --wide: of the responses both judges labelled, the share where A said harmful and B safe "
        "('A harm./B safe'), the reverse, and where one said ambiguous ('one amb.'); in brackets the share "
        "the reviewers found harmful there.",
        ("A harm./B safe", "A safe/B harm.", "one amb."),
    ),
    _t(
        "then harmful",
        "Of the responses a judge called ambiguous, the share the reviewers found harmful.",
    ),
    _t(
        "FPR, FNR",
        "False-positive rate (safe responses called harmful) and false-negative rate (harmful ones called "
        "safe), as judge papers report them.",
        ("FPR", "FNR"),
    ),
    _t(
        "false safe",
        "MLCommons' name for a harmful (unsafe) response the judge called safe; 'false unsafe' the reverse; "
        "'unsafe among safe' is 1 - NPV.",
        ("false unsafe", "unsafe among 'safe'"),
    ),
    _t(
        "judge errs differently by model",
        "A test of whether the judge's sensitivity or specificity on one model differs from its figure on the "
        "other models. If so, the judge's raw scores favour or penalise that model. 'on model' is the judge's "
        "figure on that model, 'others' its centre on the other models, 'diff.' the difference.",
        ("judge flagged", "on model", "others", "diff."),
        ("q",),
    ),
    _t(
        "q",
        "p is a test's p-value: how often a difference this large would arise by chance alone. q is the p-value "
        "adjusted for testing many at once (Benjamini-Hochberg false-discovery rate); a row is flagged when q "
        "is at most the rate, 0.10 unless judges --fdr. The family is what was tested together: score tests "
        "the routing judge's figures, judges every judge's, so their q for one test can differ.",
        ("q-value", "p", "false-discovery rate"),
    ),
    # -- exports and certification ------------------------------------------------------------------
    _t(
        "manifest",
        "manifest.json lists every file of an export with its sha256 hash; publishing its own hash pins the "
        "whole export.",
        ("sha256",),
    ),
    _t(
        "re-derived",
        "verify recomputes the scores, rankings, agreement and report from the export's own labels and design "
        "and checks they are equal to the files, without the workspace.",
    ),
    _t(
        "grade",
        "A certification scheme's grade for a model (AILuminate's five, from Poor to Excellent), read off the "
        "harmful rate against reference models' (grade --reference).",
        ("grades",),
    ),
    _t(
        "reference",
        "In the report, the treatment its figures and ranks are read under (corrected, unless chosen); in grade, "
        "the models whose harmful rate the grades are measured against.",
        ("reference treatment",),
    ),
    _t(
        "hazard",
        "The kind of harm a prompt is about (AILuminate's 12 categories, or the benchmark's own); reviewers may "
        "also name it (route --ask-hazards), with a severity from low to severe.",
        ("hazards", "severity"),
    ),
)


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


_INDEX: dict[str, Term] = {}
for _term in TERMS:
    for _name in (_term.name, *_term.aliases):
        _INDEX.setdefault(_key(_name), _term)


def lookup(word: str) -> Term | None:
    """The entry named ``word`` or with it as an alias (case and spacing ignored).

    A header that pairs a figure with its interval (``sens. [95% CI]``) finds the figure's entry.

    >>> lookup("95% CI").name, lookup("DS SENS.").name, lookup("spec. [95% CI]").name, lookup("nonsense")
    ('interval', 'Dawid-Skene', 'specificity', None)
    """
    key = _key(word)
    return _INDEX.get(key) or _INDEX.get(key.removesuffix(" [95% ci]")) or _INDEX.get(key.removesuffix(" %"))


def close_matches(word: str, n: int = 3) -> list[str]:
    """Names of entries spelled nearly like ``word`` (for an error's suggestion)."""
    found = difflib.get_close_matches(_key(word), list(_INDEX), n=n * 3, cutoff=0.6)
    names: list[str] = []
    for k in found:
        if _INDEX[k].name not in names:
            names.append(_INDEX[k].name)
    return names[:n]


def anchor(term: Term) -> str:
    """The entry's anchor in docs/guide.md (GitHub's slug of its heading)."""
    return re.sub(r"[^a-z0-9 _-]", "", term.name.lower()).replace(" ", "-")


def markdown() -> str:
    """docs/guide.md's Glossary section body: one short heading per entry, its text, its aliases."""
    out: list[str] = []
    for term in TERMS:
        out.append(f"#### {term.name}")
        out.append("")
        also = [a for a in term.aliases if _key(a) != _key(term.name)]
        text = term.text
        if also:
            text += " Also shown as: " + ", ".join(f"`{a}`" for a in also) + "."
        if term.see:
            text += " See " + ", ".join(f"[{s}](#{anchor(lookup(s) or term)})" for s in term.see) + "."
        out.extend(textwrap.wrap(text, 100, break_on_hyphens=False, break_long_words=False))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
