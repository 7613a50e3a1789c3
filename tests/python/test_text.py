"""plexus.Text and a plexus.Loader over its windows (plx_text_*, plx_loader_create_text):
the fixed split, the windows' tokens and next-token targets, and the refusals."""
import numpy as np
import pytest

import plexus

CORPUS = "abcdefgh\n%\nABC\n%\nijklmnop\n%\nDEF\n"


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "corpus"
    path.write_bytes(CORPUS.encode())
    return plexus.Text(path, validation_every=2)


def test_every_second_document_is_validation(text):
    assert (text.train, text.validation, text.documents) == (b"abcdefgh\nijklmnop\n", b"ABC\nDEF\n", 4)


def test_a_loader_serves_tokens_and_next_token_targets(text):
    loader = plexus.Loader(text.windows("train", context=4), batch_size=2, shuffle=False)
    assert loader.runs_per_epoch == 2  # 18 bytes: (18 - 1) // 4 = 4 windows
    tokens, targets = loader.run_arrays(0, 1)
    assert tokens.dtype == np.int32 and tokens.shape == (2, 4)
    data = np.frombuffer(text.train, np.uint8).astype(np.int32)
    np.testing.assert_array_equal(tokens, data[8:16].reshape(2, 4))
    np.testing.assert_array_equal(targets, data[9:17].reshape(2, 4))


def test_the_loader_keeps_its_text_alive(tmp_path):
    path = tmp_path / "corpus"
    path.write_bytes(CORPUS.encode())
    loader = plexus.Loader(plexus.Text(path, validation_every=2).windows("validation", context=3), shuffle=False)
    tokens, _ = loader.run_arrays(0, 0)
    assert tokens.astype(np.uint8).tobytes() == b"ABC"


def test_bad_input_is_a_clear_error(tmp_path, text):
    with pytest.raises(plexus.NotFound, match="does not exist"):
        plexus.Text(tmp_path / "nothing")
    with pytest.raises(plexus.InvalidArgument, match="has 4 document"):
        plexus.Text(tmp_path / "corpus")  # validation_every 10: no validation document
    with pytest.raises(ValueError, match="split is 'test'"):
        text.windows("test")
    with pytest.raises(plexus.InvalidArgument, match="fewer than one window"):
        plexus.Loader(text.windows("validation", context=8))


@pytest.mark.skipif(not __import__("os").path.isdir(plexus.FORTUNES_DIR), reason="Debian package 'fortunes' missing")
def test_the_fortunes_corpus():
    corpus = plexus.Text()
    assert corpus.documents > 1000 and len(corpus.train) > 9 * len(corpus.validation) * 0.8
