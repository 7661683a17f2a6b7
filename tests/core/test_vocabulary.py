"""The one vocabulary agrees with itself: trusted mask names and the mask conventions never contradict."""

from shapecheck.vocabulary import KEEP_MASK_NAMES, MASK_CONVENTIONS, PADDING_MASK_NAMES, SYNONYMS, AXES, canonical


def test_trusted_mask_names_agree_with_the_conventions():
    assert not KEEP_MASK_NAMES & PADDING_MASK_NAMES
    for name in KEEP_MASK_NAMES & MASK_CONVENTIONS.keys():
        assert MASK_CONVENTIONS[name] == "keep", name
    for name in PADDING_MASK_NAMES & MASK_CONVENTIONS.keys():
        assert MASK_CONVENTIONS[name] == "ignore", name


def test_every_synonym_names_an_axis():
    assert all(axis in AXES for axis in SYNONYMS.values())
    assert canonical("embed_dim") == "d_model" and canonical("d_model") == "d_model"
