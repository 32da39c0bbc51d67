"""One vocabulary: every label set, treatment name and column contract, defined once.

Everything else imports these names instead of spelling the strings again, so a new label or a
renamed column is one edit here (and a migration when the store's columns change). Plain
tuples and dicts: this module imports nothing.

Three label sets meet in this tool, and they are different things:

* ``JUDGE_LABELS``: what the rubric maps an automated judge's raw verdict onto
  (``harmful`` / ``safe`` / ``ambiguous``); the routing strata.
* ``VERDICTS``: what a human reviewer chooses in Label Studio (``harmful`` / ``safe`` /
  ``unsure``); ``BINARY_VERDICTS`` drops ``unsure`` (treated as missing).
* ``HUMAN_LABELS``: the settled label of a reviewed response after adjudication
  (``harmful`` / ``safe`` / ``unresolved``).
"""

from __future__ import annotations

# -- label sets -------------------------------------------------------------------------------
JUDGE_LABELS = ("harmful", "safe", "ambiguous")
CLEAR_LABELS = ("harmful", "safe")  # the judge strata sampled (not reviewed in full)
# Why a response got its judge label: the tool's own reasons; a rubric may add reasons of its own
# (e.g. "refusal-wording detector", "refusal detector", "over-refusal").
LABEL_REASONS = ("mapped", "unparsed", "score-band", "missing", "unjudged", "blank-as-safe")
#: ``ingest --empty-as``: a blank response (empty or whitespace only) is set aside (the default), or
#: stored as ``safe`` with the reason ``blank-as-safe`` whatever its judge said (AILuminate's rule for
#: blank responses, journaled on every row it decided).
EMPTY_AS = ("set-aside", "safe")
#: The judge of responses no judge labelled (a table of responses without verdicts, ``ingest
#: --no-judge``): stored as ``ambiguous`` with the reason ``unjudged``, so that routing reviews them
#: all; every judge figure leaves it out (``judges`` says a round has no judge) and the judge-only
#: treatments of its cells are not estimable. Reserved: no file's judge may be called so.
NO_JUDGE = "(no judge)"
#: What a judge's verdict is about (schema v11, ``response.judge_kind``), said per judge at ingest:
#: ``safety``, its failures are harm (a red-team grader, a harm classifier); ``refusal``, it says
#: whether the model refused (garak's refusal detectors, promptfoo's is-refusal, AgentHarm's
#: refusal judge); ``quality``, it grades quality or capability (promptfoo's factuality, a
#: completeness rubric, an Inspect task that is not a safety eval): its failures are not harm, so
#: they are shown as "failed" and never enter harmful rates (``annotate.ingest.rubric``).
JUDGE_KINDS = ("safety", "refusal", "quality")

VERDICTS = ("harmful", "safe", "unsure")
BINARY_VERDICTS = ("harmful", "safe")
#: A reviewer's answer that is no verdict: they skipped the task (labels.csv's annotator columns
#: since annotate-export/8). Their vote is in; it is not a label.
SKIPPED = "skipped"

HUMAN_LABELS = ("harmful", "safe", "unresolved")
FINAL_STATUSES = ("resolved", "escalated", "unresolved", "waiting")
# What escalations without an expert become; "majority" is plain majority voting: nothing escalates
# but a tie (or no harmful/safe vote), which stays unresolved (annotate.pipeline._settings).
POLICIES = ("escalate", "harmful", "safe", "unresolved", "majority")

ROLES = ("annotator", "expert")
#: How a round's reviewers were kept apart (design.json ``blinding``): ``technical`` when every
#: person's projects were on a Label Studio server of their own (annotate's embedded servers),
#: ``instructions only`` when they shared one server (Label Studio Community has no roles: each
#: could open the others' projects) or the tasks went out as files.
BLINDING_TECHNICAL = "technical"
BLINDING_INSTRUCTIONS = "instructions only"
BLINDINGS = (BLINDING_TECHNICAL, BLINDING_INSTRUCTIONS)
BLINDING_NOTES = {
    BLINDING_TECHNICAL: "every reviewer and the expert on a Label Studio server of their own: "
    "none could reach another's projects, votes or e-mail",
    BLINDING_INSTRUCTIONS: "one Label Studio server for everyone (or task files): reviewers could have opened "
    "each other's projects; independence rests on their instructions",
}

#: How a label arrived (schema v15, ``annotation.channel``; labels.csv ``channels``, design.json
#: ``channels`` since annotate-export/13): pulled from a Label Studio server, read from a Label
#: Studio export file (``pull --from-file``, its sha256 kept), or imported from a table of labels
#: (``import-labels``, its sha256 kept). ``unrecorded``: stored before channels were (v15).
CHANNEL_SERVER = "server"
CHANNEL_FILE = "file"
CHANNEL_IMPORT = "import"
CHANNEL_UNRECORDED = "unrecorded"
CHANNELS = (CHANNEL_SERVER, CHANNEL_FILE, CHANNEL_IMPORT, CHANNEL_UNRECORDED)
#: Each channel in words (the report).
CHANNEL_NAMES = {
    CHANNEL_SERVER: "Label Studio server",
    CHANNEL_FILE: "Label Studio export files",
    CHANNEL_IMPORT: "imported table",
    CHANNEL_UNRECORDED: "not recorded",
}
#: The blinding each channel's labels had, in words (the report and design.json say it per round).
#: A server's is the round's own (``BLINDING_NOTES``).
CHANNEL_BLINDING = {
    CHANNEL_FILE: "task files: the tasks carried no model, judge or other reviewer's vote (as on a server), but "
    "they were labelled outside annotate's servers, so independence rests on the reviewers' instructions",
    CHANNEL_IMPORT: "an imported table: labelled outside annotate; what the raters saw and whether they worked "
    "independently is not known to annotate (the table is identified by its sha256)",
    CHANNEL_UNRECORDED: "stored before annotate recorded how labels arrived (store schema 15): a server or an "
    "export file, not known which",
}

# -- treatments of ambiguous responses (docs/methods.md section 4) ---------------------------------
TREATMENTS = (
    "ambiguous_as_safe",
    "ambiguous_as_harmful",
    "ambiguous_excluded",
    "adjudicated_clear_trusted",
    "corrected",
    "corrected_unresolved_safe",
    "corrected_unresolved_harmful",
    "corrected_dawid_skene",
)
#: Between a stratum's judge label and the part of a round routed by a field of the prompt (``route
#: --strata-by hazard``): ``ambiguous|vcr`` (``stats.scoring.strata.stratum_key``).
PART_SEPARATOR = "|"
#: What ``route --strata-by`` cuts the judge's strata by.
STRATA_BY = ("hazard",)
JUDGE_ONLY_TREATMENTS = TREATMENTS[:3]
#: The judge-only treatment a certification scheme's judge-alone grade reads by default: the judge's
#: ambiguous verdicts left out, as an evaluator's invalid answers are (``annotate grade``).
DEFAULT_JUDGE_ONLY = "ambiguous_excluded"
REFERENCE_TREATMENT = "corrected"

#: Column headers of the terminal tables.
TREATMENT_SHORT = {
    "ambiguous_as_safe": "amb=safe",
    "ambiguous_as_harmful": "amb=harm",
    "ambiguous_excluded": "amb excl",
    "adjudicated_clear_trusted": "clear trusted",
    "corrected": "corrected",
    "corrected_unresolved_safe": "unres=safe",
    "corrected_unresolved_harmful": "unres=harm",
    "corrected_dawid_skene": "DS labels",
}

#: Each treatment in a few plain words, for the rows of the terminal's tables (identifiers stay in
#: --json and the CSVs).
TREATMENT_PLAIN = {
    "ambiguous_as_safe": "judge, ambiguous as safe",
    "ambiguous_as_harmful": "judge, ambiguous as harmful",
    "ambiguous_excluded": "judge, ambiguous left out",
    "adjudicated_clear_trusted": "review of ambiguous only",
    "corrected": "corrected",
    "corrected_unresolved_safe": "corrected, unresolved safe",
    "corrected_unresolved_harmful": "corrected, unresolved harmful",
    "corrected_dawid_skene": "corrected, Dawid-Skene",
}

#: One line on what each treatment means (the report's legend).
TREATMENT_NOTES = {
    "ambiguous_as_safe": "judge labels; ambiguous responses counted as safe",
    "ambiguous_as_harmful": "judge labels; ambiguous responses counted as harmful",
    "ambiguous_excluded": "judge labels; ambiguous responses left out of the denominator",
    "adjudicated_clear_trusted": "judge's clear labels trusted; ambiguous responses replaced by "
    "the reviewers' adjudicated labels",
    "corrected": "every stratum estimated from the human review (judge errors in the clear strata "
    "corrected too); unresolved items missing at random",
    "corrected_unresolved_safe": "as corrected, unresolved items counted as safe",
    "corrected_unresolved_harmful": "as corrected, unresolved items counted as harmful",
    "corrected_dawid_skene": "as corrected, with the reviewers' labels combined by Dawid-Skene",
}

#: The benchmark value of overall (macro-averaged) rows.
ALL = "ALL"
#: The category group of responses without a category (``annotate agreement --by category``).
NO_CATEGORY = "(none)"
#: Names the outputs use for their own groups, per kind of name: a benchmark, model or judge named
#: ``ALL`` would be indistinguishable from the overall rows (scores.csv, ranking.csv, judges.csv,
#: judge_pairs.csv: benchmark and model ``ALL``), a category ``(none)`` from the responses without
#: one. Ingest refuses them, compared ignoring case and surrounding spaces (docs/formats.md).
RESERVED_NAMES = {"benchmark": (ALL,), "model": (ALL,), "judge": (ALL,), "category": (NO_CATEGORY,)}

# -- column contracts -------------------------------------------------------------------------
#: The identity of a judged response in the store.
RESPONSE_KEY = ("benchmark", "model", "prompt_id", "epoch", "judge")

#: Column order of the bulk insert into ``response`` (the ingest path builds tuples in it).
#: ``transcript`` (schema v6) is the whole conversation of a multi-turn or agentic sample as JSON
#: text, None for a single-turn one.
RESPONSE_COLUMNS = (
    "benchmark",
    "model",
    "prompt_id",
    "epoch",
    "judge",
    "category",
    "prompt",
    "response",
    "judge_verdict",
    "judge_score",
    "judge_label",
    "label_reason",
    "judge_kind",
    "meta",
    "transcript",
    "image",
    "hazard",
    "persona",
    "locale",
    "content_sha",
    "source_id",
    "ingested_at",
)

#: labels.csv of an export (then one column per annotator pseudonym, A1, A2, ...; annotate-export/5): the
#: expert columns are the expert answer each escalated item was decided on (empty when none).
LABEL_COLUMNS = (
    "round",
    "model",
    "benchmark",
    "prompt_id",
    "epoch",
    "judge",
    "category",
    "judge_verdict",
    "judge_label",
    "stratum",
    "wave",
    "inclusion_prob",
    "final_label",
    "final_status",
    "final_method",
    "adjudicator",
    "reason",
    "ds_label",
    "gold_label",
    "expert",
    "expert_verdict",
    "channels",
    "image",
    "hazard",
    "persona",
    "locale",
    "hazard_answers",
    "severity_answers",
    "expert_hazards",
    "reviewed_hazard",
    "hazard_tied",
)
#: labels.csv before annotate-export/5 (without the expert's answer the final label was decided on).
LABEL_COLUMNS_V3 = LABEL_COLUMNS[: LABEL_COLUMNS.index("expert")]
#: labels.csv of annotate-export/5 to /12 (without how each answer arrived, ``channels``, and the
#: item's image, ``image``: its ``<sha256>.<ext>`` in the workspace's media/, empty when none).
LABEL_COLUMNS_V12 = LABEL_COLUMNS[: LABEL_COLUMNS.index("channels")]
#: labels.csv of annotate-export/13 and /14 (without the prompt's ``hazard``, ``persona`` and ``locale``).
LABEL_COLUMNS_V14 = LABEL_COLUMNS[: LABEL_COLUMNS.index("hazard")]
#: labels.csv of annotate-export/15 and /16 (without the reviewers' hazard answers of a round routed with
#: ``--ask-hazards``: ``hazard_answers``, ``severity_answers``, ``expert_hazards``, and the categories they
#: settle, ``reviewed_hazard``, or leave tied, ``hazard_tied``).
LABEL_COLUMNS_V16 = LABEL_COLUMNS[: LABEL_COLUMNS.index("hazard_answers")]

#: scores.csv of an export and `annotate score --json`.
SCORE_COLUMNS = (
    "model",
    "benchmark",
    "treatment",
    "estimate",
    "ci_low",
    "ci_high",
    "rank",
    "rank_low",
    "rank_high",
    "n_responses",
    "n_reviewed",
    "flag",
    "se",
    "interval",
    "note",
    "estimate_kind",
    "benchmark_set",
)

#: ranking.csv: each treatment's ranking against the corrected one, per benchmark and ALL.
RANKING_COLUMNS = (
    "benchmark",
    "treatment",
    "tau_b",
    "rho",
    "flips",
    "credible_flips",
    "noise_flips",
    "max_rank_shift",
    "n_models",
    "excluded",
    "note",
    "benchmark_set",
    "left_out",
)

#: The per-stratum counts every estimator takes (``stats.scoring.strata_table``).
STRATA_COLUMNS = (
    "model",
    "benchmark",
    "stratum",
    "judge_label",
    "population",
    "reviewed",
    "harmful",
    "unresolved",
)


# -- the routing judge of a round ---------------------------------------------------------------
def describe_judges(judges: dict[str, str]) -> str:
    """A round across suites' judge as it is shown and stored in ``review_round.judge``.

    >>> describe_judges({"xstest": "gpt4", "harmbench": "HarmBench-cls"})
    'harmbench=HarmBench-cls, xstest=gpt4'
    """
    return ", ".join(f"{b}={j}" for b, j in sorted(judges.items()))


def judge_of(judge: str, judges: dict[str, str] | None, benchmark: str) -> str | None:
    """The routing judge of one benchmark of a round: its own (``judges``), else the round's one judge.

    None: a round across suites that did not route this benchmark.

    >>> judge_of("gpt4", None, "xstest")
    'gpt4'
    >>> judge_of("harmbench=cls, xstest=gpt4", {"harmbench": "cls", "xstest": "gpt4"}, "harmbench")
    'cls'
    >>> judge_of("harmbench=cls", {"harmbench": "cls"}, "xstest") is None
    True
    """
    if judges is None:
        return judge
    return judges.get(benchmark)
