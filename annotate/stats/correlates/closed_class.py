"""Closed-class English words for lexical density and as the stop-word list of reply-prompt similarity.

Source and rationale: curated by hand for annotate (docs/methods.md section 6) from the closed word
classes of standard English grammars (Quirk et al. 1985, A Comprehensive Grammar of the English
Language; Biber et al. 1999, Longman Grammar of Spoken and Written English): determiners and
quantifiers, pronouns (personal, possessive, reflexive, demonstrative, interrogative/relative,
indefinite), prepositions, coordinating and subordinating conjunctions, primary auxiliaries and
modals, the particles "not" and infinitival "to", existential "there", and the common
contractions of these. Lexical density (Ure 1971) = tokens NOT in this list / all tokens.

Deliberately left out (they are lexical, or mostly used lexically in model replies): adverbs,
including conjunctive adverbs (however, therefore, thus, also, very, just); numerals; verbs that
are only sometimes auxiliary or prepositional (need, dare, get, like, regarding, following);
interjections. scikit-learn's ENGLISH_STOP_WORDS is NOT used: it holds content words (system,
fire, bill, interest, find, describe, detail) and no contractions.

The list is a constant of the package, not a data file, so the statistics read no file. Each
word class below is one string of space-separated words, as the tokeniser
``[a-z]+(?:'[a-z]+)?`` produces them (lower case); no word appears twice (a test checks both).
"""

from __future__ import annotations

__all__ = ["CLOSED_CLASS_GROUPS", "CLOSED_CLASS_WORDS", "closed_class_words"]

_GROUP_TEXT: tuple[tuple[str, str], ...] = (
    (
        "articles, determiners, quantifiers",
        (
            "a an the this that these those some any no every each either neither all both half several many much "
            "more most few fewer less least little enough such another other others what whatever which whichever "
            "whose"
        ),
    ),
    (
        "personal, possessive and reflexive pronouns",
        (
            "i me my mine myself you your yours yourself yourselves he him his himself she her hers herself it "
            "its itself we us our ours ourselves they them their theirs themselves one oneself y'all"
        ),
    ),
    (
        "interrogative, relative and indefinite pronouns",
        (
            "who whom whoever whomever someone somebody something anyone anybody anything everyone everybody "
            "everything nobody nothing none"
        ),
    ),
    (
        "prepositions (single-word)",
        (
            "about above across after against along alongside amid amidst among amongst around as at before "
            "behind below beneath beside besides between beyond by despite down during except for from in inside "
            "into near of off on onto out outside over per since than through throughout till to toward towards "
            "under underneath unlike until unto up upon via with within without"
        ),
    ),
    (
        "conjunctions (coordinating, subordinating) and wh-adverbs used as connectives",
        (
            "and but or nor so yet although though because unless while whilst whereas if whether lest once when "
            "whenever where wherever whereby how why"
        ),
    ),
    (
        "primary auxiliaries",
        ("be am is are was were been being have has had having do does did"),
    ),
    (
        "modals",
        ("can cannot could may might must shall should will would ought"),
    ),
    (
        "particles and pro-forms",
        ("not there here then"),
    ),
    (
        "contractions: pronoun + auxiliary/modal",
        (
            "i'm i've i'd i'll you're you've you'd you'll he's he'd he'll she's she'd she'll it's it'd it'll "
            "we're we've we'd we'll they're they've they'd they'll that's that'd that'll there's there'd there'll "
            "there're here's what's what'd what'll what're who's who'd who'll who're where's where'd when's why's "
            "how's how'd let's"
        ),
    ),
    (
        "contractions: auxiliary/modal + not",
        (
            "isn't aren't wasn't weren't haven't hasn't hadn't don't doesn't didn't won't wouldn't can't couldn't "
            "shouldn't mustn't mightn't needn't shan't oughtn't ain't"
        ),
    ),
)

#: (word class, its words in curation order), in the order of the grammars cited above.
CLOSED_CLASS_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, tuple(words.split())) for name, words in _GROUP_TEXT
)

#: Every closed-class word: the union of :data:`CLOSED_CLASS_GROUPS` (270 words).
CLOSED_CLASS_WORDS: frozenset[str] = frozenset(word for _, words in CLOSED_CLASS_GROUPS for word in words)


def closed_class_words() -> frozenset[str]:
    """The shipped closed-class word list, :data:`CLOSED_CLASS_WORDS`.

    Returns
    -------
    frozenset of str
        The 270 lower-case words: determiners, pronouns, prepositions, conjunctions,
        auxiliaries, modals, particles and their contractions.

    Examples
    --------
    >>> words = closed_class_words()
    >>> "the" in words, "don't" in words, "system" in words
    (True, True, False)
    """
    return CLOSED_CLASS_WORDS
