"""The export schemas: one row per version, and the rules every version keeps.

An export folder holds the audit record (its *inputs*: ``labels.csv``, ``judge_labels.csv``,
``design.json``), the files derived from it (scores, rankings, the judge audit, agreement, the
report) and ``manifest.json``, which names the schema. A schema says exactly which files an export
of that version holds, which are re-derived by ``verify`` and how. Changing what a derived file
holds, or how it is rendered, is a new schema: one row appended here, and the exports written by
every earlier row keep verifying (tests/data/exports/ holds one frozen export of each;
tests/test_frozen_exports.py verifies them with today's code, so a change that silently alters
an old export's files fails the tests). When a new row changes a *method*, an earlier row's
``rederived`` shrinks to the files this code can still reproduce, and ``not_rederived`` says why
the others are checked for their hash only: verify never claims to have re-derived what it
cannot.

Rows:

* ``annotate-export/1``: its files are checked for their hashes and its design for its form;
  nothing is re-derived: its scores came from the estimators before issue #13 (fiducial stratum
  draws, partial identification of unresolved items), which this version no longer has, and its
  agreement.json and report.html drew on the database. CSVs not spreadsheet-neutralised.
* ``annotate-export/2``: every derived file re-derived (report.html byte for byte); CSV cells
  that would open as formulas neutralised; P(tie).
* ``annotate-export/3``: judge_labels.csv (an input) and the judge audit (judges.csv,
  judge_pairs.csv, the report's judges section).
* ``annotate-export/4``: every round of design.json says how its reviewers were kept apart
  (``blinding``: ``technical`` or ``instructions only``; the report shows it).
* ``annotate-export/5``: every round of design.json records the rules of its latest adjudication
  (``adjudication``); labels.csv carries the expert's answer each escalated item was decided on
  (``expert``, ``expert_verdict``), so that verify re-derives every final label from the votes,
  the expert's answers and the rules, and a difference fails; the intervals of issue #23.
* ``annotate-export/6``: a round across suites routes each benchmark on its own judge: its
  design.json round says so (``judges``: {benchmark: judge}; ``judge`` reads "B1=J1, B2=J2"), and
  labels.csv's judge of each row is its benchmark's. Otherwise as /5 (an export without such a
  round has the same files as /5).
* ``annotate-export/8``: a round lives in time. order.csv (an input) records the order each
  reviewer was given the tasks in, and every round of design.json its order design (``order``:
  blocks of a shared seeded order shuffled per reviewer, or independent orders), from which verify
  re-derives every position; labels.csv's annotator columns say ``skipped`` for a skip (the vote is
  in, without a label) and final_status ``waiting`` for an item whose routed votes are not all in
  (the adjudication rules' ``wait_for_votes``); the manifest says whether the export is ``interim``
  or ``final`` and each round's state (``rounds_state``), re-derived by verify, and the report
  says it too.
* ``annotate-export/9``: does a judge err differently by model? judge_models.csv (derived) holds,
  per judge, model and figure (sensitivity, specificity, PPV), the figure on the model against the
  other models', its p-value, the Benjamini-Hochberg q over every test and ``flagged`` at q <= 0.10;
  the report's judges section shows it. Otherwise as /8.
* ``annotate-export/10``: the score draws share the fiducial mixture's component between all of a
  model's strata (issue #33, methods 9.17; /5 to /9 shared it between a model's strata of one judge
  label, and verify re-derives them so); scores.json's ``interval`` says which. Otherwise as /9.
* ``annotate-export/11``: every judge figure from the one posterior of the reviewed population
  (issue #41, methods 9.19). judges.csv carries every figure (agreement, FPR and FNR too) and its
  ``estimand`` (the export's: ``responses`` for the fixed estimand, ``prompts`` for the general
  one); judge_pairs.csv each pair's paired test of equal balanced accuracy on the prompts view
  (``difference``, its interval, ``p_value``) and McNemar's test only under a census or within one
  stratum; judge_models.csv tests sensitivity and specificity only, against the robust centre of
  the other testable models, with ``n_truth_reviewed`` and ``testable``; the report says which
  estimand the judge figures are and, for a census, that they describe these responses.
  Otherwise as /10. Since /11, the judge files and the report of /5 to /10 are checked for their
  hashes only (their draws were the urn of 9.7 and the test's own Dirichlet, which this version
  replaced); their scores, rankings and agreement are still re-derived.
* ``annotate-export/12``: a round of design.json may be imported (issue #42: ``origin``, wave 0,
  each rater's own items in order.csv, settled final labels as the settlers' answers); the
  report's judge-pair table shows the difference and its interval on two lines. Otherwise as /11,
  whose report is checked for its hash since (its pair table's layout changed).
* ``annotate-export/13``: how every label arrived (issue #42): labels.csv's ``channels`` (each
  answer's ``WHO=CHANNEL``: a Label Studio server, an export file, an imported table) and each
  round of design.json's ``channels`` (per channel: answers, per person, the blinding those
  answers had, the files' sha256), re-derived by verify from labels.csv; a round may hold
  responses no judge labelled (judge ``(no judge)``: its judge-only treatments not estimable, no
  judge audited); labels.csv's ``image`` names each item's image by its hash. Otherwise as /12.
* ``annotate-export/14``: ``grades.csv`` when the export is graded (issue #44): the manifest's
  settings record the grading (the scheme whole, the reference models, the judge-only treatment) and
  verify re-derives grades.csv from the scores' draws; the report gains a Grades section. judges.csv
  names its figures as certifiers do too (``false_safe_rate``, ``false_unsafe_rate``,
  ``unsafe_among_safe`` = 1 - NPV, with intervals); an interim report's headline counts the
  responses sent to review and those with a vote so far. Otherwise as /13.
* ``annotate-export/15``: hazard categories (issue #44): labels.csv's ``hazard`` (the stored codes,
  ``;``-joined), ``persona`` and ``locale`` of each item's prompt; a round routed by hazard (``route
  --strata-by hazard``) has strata cut by it: each carries its ``part`` (``ambiguous|vcr``) and the
  round says ``strata_by``. Otherwise as /14.
* ``annotate-export/16``: per-hazard grades (issue #44): each round of design.json whose population
  carries hazards records N_hd (``hazard_population``: the responses of each estimation stratum in
  each hazard), so that a graded export's grades.csv holds a row per model and hazard besides the
  overall ones, re-derived by verify; grades.csv's ``note`` says why a row has no grade (a hazard the
  scores refuse is one row, model ``(every model)``); the report's Grades section adds a panel per
  hazard. Otherwise as /15.
* ``annotate-export/17``: the reviewers' hazard answers (issue #44, ``route --ask-hazards``):
  labels.csv's ``hazard_answers``, ``severity_answers``, ``expert_hazards`` and, re-derived from them,
  ``reviewed_hazard`` and ``hazard_tied`` (``audit.hazard_answers``); ``hazard_agreement.json``, present
  exactly when some row carries an answer, with the agreement on each category and on severity,
  re-derived by verify. Otherwise as /16.
* ``annotate-export/18``: the report answers first (issue #45): its first screen opens with each model's
  harmful rate after review, its interval and rank, and what the judge alone said, one plain sentence
  each; its agreement figure is the one on the labels as collected (3-way), the binary one beside it.
  Otherwise as /17.
* ``annotate-export/7``: a round's ambiguous strata may be sampled: design.json's round records its
  rule (``ambiguous``: ``all``, a size or a fraction) and verify re-derives every stratum's sample
  size from it and ``clear_per_cell``; strata of a next wave (``route --next-wave``) carry
  ``of_wave`` and ``sampled_before`` (p_h), their population is the remainder R_h, and the
  estimators pool a stratum's waves (N_h with every wave's items, methods 4.9).

Since issue #23 changed the methods, exports of /2 to /4 are checked like /1: inputs for their
form, derived files for their hashes, CSVs for their schema's exact columns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from annotate.columns import LABEL_COLUMNS, LABEL_COLUMNS_V3, LABEL_COLUMNS_V12, LABEL_COLUMNS_V14, LABEL_COLUMNS_V16

__all__ = [
    "CURRENT",
    "MAX_LISTED",
    "OPTIONAL_FILES",
    "SCHEMAS",
    "ExportSchema",
    "listed",
    "schema_named",
]

#: How many problems of one kind are listed before the rest are only counted.
MAX_LISTED = 20
#: A file an export of any schema may hold (written when a diagnosis exists), checked for its
#: hash and internal consistency only.
OPTIONAL_FILES = ("diagnostics.json",)

_SCORES = ("scores.csv", "ranking.csv", "flips.csv", "p_safer.csv")
_JUDGES = ("judges.csv", "judge_pairs.csv")
#: The files of an export since annotate-export/3: its inputs, and every file derived from them.
_INPUTS = ("labels.csv", "judge_labels.csv", "design.json")
#: ... since annotate-export/8: order.csv too.
_INPUTS_8 = (*_INPUTS, "order.csv")
_DERIVED = (*_SCORES, "p_tie.csv", *_JUDGES, "scores.json", "agreement.json", "report.html")
#: ... since annotate-export/9: the judges' test by model too.
_DERIVED_9 = (*_SCORES, "p_tie.csv", *_JUDGES, "judge_models.csv", "scores.json", "agreement.json", "report.html")

#: Why exports of /2 to /4 are checked for their hashes only: their numbers came from methods this
#: version replaced, so re-deriving them would report differences that are not tampering.
_METHODS_OF_23 = (
    "issue #23 changed the methods behind every derived file (the fiducial component shared by a model's strata "
    "of one judge label, bounds over corner assignments with transport, PPI's cross-fitted lambda and fallback, "
    "unseen judge labels in the judge audit's draws, BCa agreement intervals with a minimum of pairable values), "
    "so its numbers are no longer what this version computes"
)
#: Why the judge files and the report of /5 to /10 are checked for their hashes only.
_METHODS_OF_41 = (
    "issue #41 replaced the judge audit's draws (the urn of methods 9.7 and the model test's own Dirichlet) by "
    "one posterior of the reviewed population, so the judge figures, pair comparisons, model test and the "
    "report that shows them are no longer what this version computes; the scores, rankings and agreement are "
    "re-derived"
)
#: Why the report of /11 is checked for its hash only.
_REPORT_OF_42 = (
    "issue #42 changed the report's judge-pair table (the difference in balanced accuracy and its interval on "
    "two lines, p below 0.001 as '< 0.001'), so its report.html is no longer what this version renders; every "
    "other file is re-derived"
)
#: The files of /5 to /10 this version re-derives (everything but the judge audit and the report).
_REDERIVED_5 = tuple(f for f in _DERIVED if f not in (*_JUDGES, "report.html"))
_REDERIVED_9 = tuple(f for f in _DERIVED_9 if f not in (*_JUDGES, "judge_models.csv", "report.html"))
#: The exact columns of annotate-export/2 to /4 (labels.csv: before the annotator columns).
_SCORES_HEADER = (
    "scores.csv",
    (
        *("model", "benchmark", "treatment", "estimate", "ci_low", "ci_high", "rank", "rank_low", "rank_high"),
        *("n_responses", "n_reviewed", "flag", "se", "interval", "note", "estimate_kind", "benchmark_set"),
    ),
)
_RANKING_HEADER = (
    "ranking.csv",
    (
        *("benchmark", "treatment", "tau_b", "rho", "flips", "credible_flips", "noise_flips", "max_rank_shift"),
        *("n_models", "excluded", "note", "benchmark_set", "left_out"),
    ),
)
_LABELS_HEADER = ("labels.csv", LABEL_COLUMNS_V3)


@dataclass(frozen=True)
class ExportSchema:
    """What an export of one schema version holds and how ``verify`` checks it."""

    name: str
    #: The audit record's files (checked, never re-derived), in the order verify reports them.
    inputs: tuple[str, ...]
    #: Every derived file, in the order verify reports them.
    derived: tuple[str, ...]
    #: The derived files re-derived from the inputs (the others are checked for their hash only).
    rederived: tuple[str, ...]
    #: CSV cells that would open as formulas are written with a leading apostrophe.
    neutralised: bool
    #: Every round of design.json has ``blinding``.
    blinding: bool
    #: One line on what the version added.
    summary: str
    #: labels.csv's columns before the annotator columns.
    label_columns: tuple[str, ...] = LABEL_COLUMNS_V3
    #: Every final label of labels.csv is re-derived from the votes, the expert's answers and the
    #: adjudication rules design.json records (and a difference fails).
    decisions: bool = False
    #: Why the derived files outside ``rederived`` are checked for their hash only.
    not_rederived: str = ""
    #: The exact columns of CSV files this version cannot re-derive: a later export relabeled as
    #: this schema has other columns and is refused (no downgrade to fewer checks).
    headers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: A round of design.json may route each benchmark on its own judge (``judges``).
    judges_per_benchmark: bool = False
    #: A round of design.json may record its ambiguous rule (``ambiguous``) and next waves drawn from
    #: its strata's remainders (strata with ``of_wave``, ``sampled_before``).
    sampled_design: bool = False
    #: Every round of design.json records its task order (``order``), and order.csv (an input) holds
    #: each reviewer's queue, re-derived from it.
    ordered: bool = False
    #: labels.csv's annotator columns may say ``skipped`` (the reviewer's vote is in, without a label)
    #: and its final_status ``waiting`` (a routed vote is not in).
    skips: bool = False
    #: The manifest says whether the export is ``interim`` (a round not finished) or ``final``, with
    #: each round's state (``rounds_state``), which verify re-derives from labels.csv.
    round_state: bool = False
    #: judge_models.csv (derived): every judge's figures on each model tested against the other
    #: models'; the report's section on it.
    model_test: bool = False
    #: Which strata share the fiducial mixture's component in the score draws (methods 9.12, 9.17):
    #: ``"label"`` (a model's strata of one judge label: issue #23, /5 to /9) or ``"model"`` (all of a
    #: model's strata: issue #33, since /10). The derived files are re-derived with it.
    fiducial_component: str = "model"
    #: The judge audit of issue #41 (methods 9.19): judges.csv with every figure and its estimand,
    #: judge_pairs.csv with the pair test, judge_models.csv with testability; the report says the estimand.
    one_posterior: bool = False
    #: Since annotate-export/12: a round of design.json may be an imported one (``origin``); an older
    #: schema holding one is refused (no version that wrote it could export such a round).
    imported_rounds: bool = False
    #: Since annotate-export/13: labels.csv says how each answer arrived (``channels``) and every round
    #: of design.json counts them per channel and person with each channel's blinding (``channels``),
    #: which verify re-derives from labels.csv (``annotate.audit.channels``); a round may have no judge.
    channels: bool = False
    #: The newest store schema any writer of this export schema had (None: the current one's, this
    #: annotate's): a manifest claiming this schema with a newer ``store_schema_version`` was written
    #: by a later annotate and relabelled (verify refuses it). From the frozen exports: at most the
    #: store version that wrote the next schema's first export.
    last_store: int | None = None
    #: Derived files an export of this schema holds only when asked for, always re-derived (since
    #: annotate-export/14: ``grades.csv``, present exactly when the manifest's settings record a grading).
    optional_derived: tuple[str, ...] = ()
    #: Since annotate-export/14: judges.csv also names its figures as certifiers do (false safe rate,
    #: false unsafe rate, unsafe among "safe" verdicts = 1 - NPV, each with its interval).
    certifier_figures: bool = False
    #: Since annotate-export/14: an interim report's headline counts the responses sent to review and
    #: those with a vote so far (before: "reviewed by humans" for every routed response, issue #43).
    interim_headline: bool = False
    #: Since annotate-export/15: labels.csv names each item's prompt's hazard, persona and locale, and a
    #: round of design.json may be routed by hazard (its strata's ``part``); an older schema holding one is refused.
    hazards: bool = False
    #: Since annotate-export/16: design.json's rounds may record N_hd per hazard (``hazard_population``),
    #: and a graded export's grades.csv holds per-hazard rows and a ``note`` column.
    hazard_grades: bool = False
    #: Since annotate-export/17: labels.csv's reviewers' hazard answers and hazard_agreement.json.
    reviewer_hazards: bool = False
    #: Since annotate-export/18: the report's first screen gives the answer (issue #45).
    answer_first: bool = False
    #: Since annotate-export/19: the report in plain words (issue #45): its judge sections open with one
    #: sentence of what they found (the better judge and how sure; whether a judge errs differently by
    #: model), the summary's agreement line leads with the labels as collected, no code identifier there;
    #: and hazard_agreement.json's category intervals are the joined ones (methods 9.23; the bootstrap's
    #: alone fell short for rare categories).
    plain_words: bool = False

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of such an export but the manifest (and its signature), optional ones aside."""
        return (*self.inputs, *self.derived)

    @property
    def judged(self) -> bool:
        """The export holds the judges' verdicts (judge_labels.csv) and their audit."""
        return "judge_labels.csv" in self.inputs

    @property
    def full(self) -> bool:
        """Every derived file is re-derived."""
        return set(self.rederived) == set(self.derived)


SCHEMAS: dict[str, ExportSchema] = {
    s.name: s
    for s in (
        ExportSchema(
            "annotate-export/1",
            last_store=5,
            inputs=("labels.csv", "design.json"),
            derived=(*_SCORES, "scores.json", "agreement.json", "report.html"),
            rederived=(),
            neutralised=False,
            blinding=False,
            summary="scores, rankings, agreement and a report from labels.csv and design.json",
            not_rederived="annotate-export/1 files came from the estimators before issue #13 (fiducial stratum "
            "draws, partial identification of unresolved items), which this version no longer has, and its "
            "agreement.json and report.html drew on the database",
            headers=(
                (
                    "scores.csv",
                    (
                        *("model", "benchmark", "treatment", "estimate", "ci_low", "ci_high", "rank", "rank_low"),
                        *("rank_high", "n_responses", "n_reviewed", "flag", "se", "interval", "note"),
                    ),
                ),
                (
                    "ranking.csv",
                    (
                        *("benchmark", "treatment", "tau_b", "rho", "flips", "credible_flips", "noise_flips"),
                        *("max_rank_shift", "n_models", "excluded"),
                    ),
                ),
                (
                    "labels.csv",
                    (
                        *("round", "model", "benchmark", "prompt_id", "epoch", "judge", "category", "judge_verdict"),
                        *("judge_label", "stratum", "wave", "inclusion_prob", "final_label", "final_status"),
                        *("final_method", "adjudicator", "reason", "ds_label"),
                    ),
                ),
            ),
        ),
        ExportSchema(
            "annotate-export/2",
            last_store=8,
            inputs=("labels.csv", "design.json"),
            derived=(*_SCORES, "p_tie.csv", "scores.json", "agreement.json", "report.html"),
            rederived=(),
            neutralised=True,
            blinding=False,
            summary="every derived file re-derived, the report byte for byte; spreadsheet-safe CSVs; P(tie)",
            not_rederived=_METHODS_OF_23,
            headers=(_SCORES_HEADER, _RANKING_HEADER, _LABELS_HEADER),
        ),
        ExportSchema(
            "annotate-export/3",
            last_store=8,
            inputs=_INPUTS,
            derived=_DERIVED,
            rederived=(),
            neutralised=True,
            blinding=False,
            summary="the judges' verdicts (judge_labels.csv) and the judge audit (judges.csv, judge_pairs.csv)",
            not_rederived=_METHODS_OF_23,
            headers=(_SCORES_HEADER, _RANKING_HEADER, _LABELS_HEADER),
        ),
        ExportSchema(
            "annotate-export/4",
            last_store=9,
            inputs=_INPUTS,
            derived=_DERIVED,
            rederived=(),
            neutralised=True,
            blinding=True,
            summary="each round's blinding (technical or instructions only) in design.json and the report",
            not_rederived=_METHODS_OF_23,
            headers=(_SCORES_HEADER, _RANKING_HEADER, _LABELS_HEADER),
        ),
        ExportSchema(
            "annotate-export/5",
            last_store=10,
            inputs=_INPUTS,
            derived=_DERIVED,
            rederived=_REDERIVED_5,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="each round's adjudication rules in design.json and the expert's answers in labels.csv: every "
            "final label re-derived from the votes; the intervals of issue #23",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            fiducial_component="label",
        ),
        ExportSchema(
            "annotate-export/6",
            last_store=12,
            inputs=_INPUTS,
            derived=_DERIVED,
            rederived=_REDERIVED_5,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="a round across suites: each benchmark routed on its own judge (design.json's judges)",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            fiducial_component="label",
        ),
        ExportSchema(
            "annotate-export/7",
            last_store=13,
            inputs=_INPUTS,
            derived=_DERIVED,
            rederived=_REDERIVED_5,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="sampled ambiguous strata (each round's ambiguous rule, its sample sizes re-derived) and next "
            "waves from the strata's remainders (of_wave, sampled_before; scored given the past)",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            fiducial_component="label",
        ),
        ExportSchema(
            "annotate-export/8",
            last_store=13,
            inputs=_INPUTS_8,
            derived=_DERIVED,
            rederived=_REDERIVED_5,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="a round in time: each reviewer's task order (order.csv, re-derived from design.json's order), "
            "skips and waiting items in labels.csv, interim or final in the manifest and the report",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            fiducial_component="label",
        ),
        ExportSchema(
            "annotate-export/9",
            last_store=13,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_REDERIVED_9,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="each judge's figures on each model tested against the other models' (judge_models.csv, "
            "Benjamini-Hochberg q, flagged), in the report too",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="label",
        ),
        ExportSchema(
            "annotate-export/10",
            last_store=14,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_REDERIVED_9,
            not_rederived=_METHODS_OF_41,
            neutralised=True,
            blinding=True,
            summary="model rows that cover with rare harm over many sparse strata: the fiducial component shared by "
            "all of a model's strata (scores.json's interval says so)",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
        ),
        ExportSchema(
            "annotate-export/11",
            last_store=14,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=tuple(f for f in _DERIVED_9 if f != "report.html"),
            not_rederived=_REPORT_OF_42,
            neutralised=True,
            blinding=True,
            summary="every judge figure from one posterior of the reviewed population: judges.csv with its estimand "
            "(the export's), each judge pair's design-weighted test, the model test on sensitivity and specificity "
            "with testability",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
        ),
        ExportSchema(
            "annotate-export/12",
            last_store=14,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="labels a team already had: an imported round in design.json (origin: the file's name and "
            "sha256, census or given, settled final labels), each rater's own items in order.csv; the report's "
            "judge-pair difference and interval on two lines",
            label_columns=LABEL_COLUMNS_V12,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
        ),
        ExportSchema(
            "annotate-export/13",
            last_store=15,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="how every label arrived: labels.csv's channels (server, export file, imported table) and "
            "design.json's count per round, channel and person with each channel's blinding and files' sha256; "
            "rounds of responses no judge labelled (judge-only treatments not estimable, no judge audited); each "
            "item's image by its hash (labels.csv image)",
            label_columns=LABEL_COLUMNS_V14,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
        ),
        ExportSchema(
            "annotate-export/14",
            last_store=15,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="a certification scheme's grades when the export is asked for them (export --grade-reference): "
            "grades.csv, one row per model with the corrected grade, its probability under the scores' posterior, "
            "whether its interval straddles a band edge, and the judge-alone grade; the manifest's settings record "
            "the scheme whole, the references and the judge-only treatment; the report's Grades section",
            label_columns=LABEL_COLUMNS_V14,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
            optional_derived=("grades.csv",),
            certifier_figures=True,
            interim_headline=True,
        ),
        ExportSchema(
            "annotate-export/15",
            last_store=16,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="hazard categories (issue #44): labels.csv's hazard, persona and locale of each item's prompt; "
            "a round routed by hazard (route --strata-by hazard): design.json's strata carry their part "
            "(ambiguous|vcr) and the round says strata_by",
            label_columns=LABEL_COLUMNS_V16,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
            optional_derived=("grades.csv",),
            certifier_figures=True,
            interim_headline=True,
            hazards=True,
        ),
        ExportSchema(
            "annotate-export/16",
            last_store=16,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="per-hazard grades (issue #44): design.json's rounds record N_hd (hazard_population) when their "
            "population carries hazards; a graded export's grades.csv adds a row per model and hazard and a note "
            "column; the report's Grades section a panel per hazard",
            label_columns=LABEL_COLUMNS_V16,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
            optional_derived=("grades.csv",),
            certifier_figures=True,
            interim_headline=True,
            hazards=True,
            hazard_grades=True,
        ),
        ExportSchema(
            "annotate-export/17",
            last_store=16,
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="the reviewers' hazard answers (issue #44, route --ask-hazards): labels.csv's hazard_answers, "
            "severity_answers, expert_hazards, reviewed_hazard and hazard_tied; hazard_agreement.json, the agreement "
            "on each category and on severity, re-derived",
            label_columns=LABEL_COLUMNS,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
            optional_derived=("grades.csv", "hazard_agreement.json"),
            certifier_figures=True,
            interim_headline=True,
            hazards=True,
            hazard_grades=True,
            reviewer_hazards=True,
        ),
        ExportSchema(
            "annotate-export/18",
            inputs=_INPUTS_8,
            derived=_DERIVED_9,
            rederived=_DERIVED_9,
            neutralised=True,
            blinding=True,
            summary="the report answers first (issue #45): each model's harmful rate after review with its interval, "
            "rank and the judge-alone rate in one plain sentence on the first screen; the 3-way agreement as the "
            "headline, the binary beside it",
            last_store=16,
            label_columns=LABEL_COLUMNS,
            decisions=True,
            judges_per_benchmark=True,
            sampled_design=True,
            ordered=True,
            skips=True,
            round_state=True,
            model_test=True,
            fiducial_component="model",
            one_posterior=True,
            imported_rounds=True,
            channels=True,
            optional_derived=("grades.csv", "hazard_agreement.json"),
            certifier_figures=True,
            interim_headline=True,
            hazards=True,
            hazard_grades=True,
            reviewer_hazards=True,
            answer_first=True,
        ),
    )
}
# From /19 on, a schema is the one before it with what changed (dataclasses.replace).
SCHEMAS["annotate-export/19"] = replace(
    SCHEMAS["annotate-export/18"],
    name="annotate-export/19",
    summary="the report in plain words (issue #45): its judge sections open with what they found, one sentence "
    "each (the better judge with its balanced accuracy and how sure the order is; whether a judge errs "
    "differently by model); the summary's agreement line leads with the labels as collected; a hazard category's "
    "agreement interval joins the unit bootstrap's with a posterior over unit patterns (methods 9.23)",
    last_store=None,
    plain_words=True,
)
#: The schema ``annotate export`` writes.
CURRENT = SCHEMAS["annotate-export/19"]


def schema_named(name: object) -> ExportSchema | None:
    """The schema of that name, or None for a name no version of annotate wrote."""
    return SCHEMAS.get(name) if isinstance(name, str) else None


def listed(problems: list[str], found: list[str], what: str) -> None:
    """Append the first ``MAX_LISTED`` of ``found`` to ``problems``, then a count of the rest."""
    problems.extend(found[:MAX_LISTED])
    if len(found) > MAX_LISTED:
        problems.append(f"... and {len(found) - MAX_LISTED} more {what}")
