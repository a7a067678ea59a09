"""IMDB: the download (resume, checksum, offline), the archive layout, the tokenizer and the models."""

import hashlib
import http.server
import io
import tarfile
import threading

import numpy as np
import pytest
import torch

from conftest import killed_after_optimizer_steps
from reprobench.core.download import DownloadError, download
from reprobench.wade import imdb, imdb_models


def make_archive(path):
    """A small archive in aclImdb_v1.tar.gz's real layout."""
    reviews = {"train/pos/0_9.txt": "A great film!", "train/pos/1_8.txt": "Loved it.",
               "train/neg/0_2.txt": "Awful <br /><br />boring.", "test/pos/0_10.txt": "Superb acting.",
               "test/neg/0_1.txt": "Worst movie ever.", "train/unsup/0_0.txt": "unlabelled"}
    with tarfile.open(path, "w:gz") as tar:
        for name, text in reviews.items():
            data = text.encode()
            info = tarfile.TarInfo(f"aclImdb/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("aclImdb/imdb.vocab")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"a\nb"))
    return path


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves one file with HTTP Range support, as the real server does."""
    payload = b""

    def do_GET(self):
        start = 0
        if "Range" in self.headers:
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
            self.send_response(206)
        else:
            self.send_response(200)
        body = self.payload[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    archive = make_archive(tmp_path / "src.tar.gz")
    RangeHandler.payload = archive.read_bytes()
    httpd = http.server.HTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/aclImdb_v1.tar.gz", hashlib.md5(RangeHandler.payload).hexdigest()
    httpd.shutdown()


def test_download_resumes_checks_and_extracts(tmp_path, server):
    url, md5 = server
    dest = tmp_path / "res" / "aclImdb_v1.tar.gz"
    dest.parent.mkdir()
    (dest.parent / "aclImdb_v1.tar.gz.part").write_bytes(RangeHandler.payload[:100])  # an interrupted download
    assert download(url, dest, md5) == dest and dest.read_bytes() == RangeHandler.payload
    assert not (dest.parent / "aclImdb_v1.tar.gz.part").exists()
    root = imdb.extract(dest, tmp_path / "res")
    data = imdb.read(root)
    assert data["train"][0] == ["Awful <br /><br />boring.", "A great film!", "Loved it."]  # neg first, sorted
    assert data["train"][1].tolist() == [0, 1, 1] and data["test"][1].tolist() == [0, 1]
    assert not imdb.is_synthetic(root)


def test_checksum_mismatch_and_offline_are_clear(tmp_path, server):
    url, _ = server
    with pytest.raises(DownloadError, match="does not match the pinned"):
        download(url, tmp_path / "x.tar.gz", "0" * 32)
    assert not (tmp_path / "x.tar.gz").exists() and not (tmp_path / "x.tar.gz.part").exists()
    with pytest.raises(DownloadError, match=r"cannot download http://127.0.0.1:9/a.tar.gz .*offline"):
        download("http://127.0.0.1:9/a.tar.gz", tmp_path / "a.tar.gz", "0" * 32, timeout=5)


def test_synthetic_stand_in_has_the_real_layout_and_says_so(tmp_path):
    root = imdb.make_synthetic(tmp_path, 20, 10, seed=1)
    data = imdb.read(root)
    assert len(data["train"][0]) == 20 and len(data["test"][0]) == 10 and imdb.is_synthetic(root)
    assert sorted(p.name for p in (root / "train").iterdir()) == ["neg", "pos"]


def test_tokenizer_has_no_special_tokens():
    tok = imdb.train_tokenizer(["A great film! Really great.", "Awful, boring film."] * 20)
    vocab = tok.get_vocab()
    assert "[PAD]" not in vocab and "[UNK]" not in vocab
    assert tok.id_to_token(0) == "!"  # what the reference pads with


def test_tokenizer_training_is_deterministic(tmp_path):
    """The plain trainer gave 20 different vocabularies in 20 trainings of this corpus (tokenizers#1794)."""
    data = imdb.read(imdb.make_synthetic(tmp_path / "imdb", 64, 32, 0))
    texts = data["train"][0] + data["test"][0]
    vocabularies = {tuple(sorted(imdb.train_tokenizer(texts).get_vocab().items())) for _ in range(8)}
    assert len(vocabularies) == 1
    vocab = dict(next(iter(vocabularies)))
    alphabet = sorted(t for t in vocab if len(t) == 1)
    assert [vocab[t] for t in alphabet] == list(range(len(alphabet)))  # ids laid out as the trainer does
    subwords = sorted(t for t in vocab if len(t) == 3 and t.startswith("##"))
    assert [vocab[t] for t in subwords] == list(range(len(alphabet), len(alphabet) + len(subwords)))


def test_models_shapes_init_and_padding_in_the_transformer_mean():
    torch.manual_seed(0)
    tokens = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    lengths = torch.tensor([3, 5])
    for model in imdb_models.MODELS:
        net = imdb_models.build(model, 20).eval()
        assert net(tokens, lengths).shape == (2, 2)
    linear = imdb_models.build("linear", 400)
    assert linear.out.weight.abs().max() <= np.sqrt(1 / 400) / 100
    tf = imdb_models.build("transformer", 20).eval()
    # the reference's init_weights: embedding and decoder U(-0.1, 0.1), decoder bias 0 (not PyTorch's N(0, 1))
    assert tf.embed.weight.abs().max() <= 0.1 and tf.embed.weight.std() < 0.07 and tf.out.weight.abs().max() <= 0.1
    assert torch.all(tf.out.bias == 0)
    short = tf(tokens[:1, :3], lengths[:1])
    assert not torch.allclose(short, tf(tokens[:1], lengths[:1]))  # padding changes the mean, as released
    rnn = imdb_models.build("lstm", 20).eval()
    assert torch.allclose(rnn(tokens[:1, :3], lengths[:1]), rnn(tokens[:1], lengths[:1]), atol=1e-6)


@pytest.mark.parametrize("model, killed_after", [("lstm", 7), ("transformer", 10)])  # mid-epoch; an epoch's end
def test_imdb_training_resumes_from_its_checkpoint_identically(tmp_path, monkeypatch, model, killed_after):
    rng = np.random.RandomState(0)
    seqs = [rng.randint(1, 30, rng.randint(3, 12)) for _ in range(56)]
    labels = rng.randint(0, 2, 56)
    args = (model, 30, seqs[:40], labels[:40], seqs[40:], labels[40:], 3)
    kwargs = dict(epochs=3, batch=8, eval_every_examples=8)  # 5 steps per epoch, an evaluation after each
    full = imdb_models.train(*args, **kwargs)
    ckpt = tmp_path / "run.pt"
    with killed_after_optimizer_steps(monkeypatch, killed_after):
        imdb_models.train(*args, **kwargs, checkpoint=str(ckpt), checkpoint_every_s=0)
    assert torch.load(ckpt, weights_only=False)["at"]["examples"] == 8 * killed_after
    resumed = imdb_models.train(*args, **kwargs, checkpoint=str(ckpt))
    np.testing.assert_array_equal(resumed[0], full[0])
    np.testing.assert_array_equal(resumed[1], full[1])
    # A checkpoint of another configuration (seed 4) is ignored: that run starts over and goes the full length.
    other = imdb_models.train(model, 30, seqs[:40], labels[:40], seqs[40:], labels[40:], 4, **kwargs,
                              checkpoint=str(ckpt))
    assert len(other[0]) == len(full[0])


@pytest.mark.parametrize("member", ["traversal", "absolute_link", "outside_link"])
def test_extraction_refuses_paths_and_links_outside_its_folder(tmp_path, member):
    """A crafted archive cannot write outside resources/ (tarfile's 'data' filter): the extraction stops naming
    the archive and nothing lands outside."""
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b"pwned"
        if member == "traversal":
            info = tarfile.TarInfo("aclImdb/../../escaped.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        else:
            info = tarfile.TarInfo("aclImdb/train/pos/0_9.txt")
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd" if member == "absolute_link" else "../../../../escaped.txt"
            tar.addfile(info)
    dest = tmp_path / "res"
    dest.mkdir()
    with pytest.raises(imdb.ReprobenchError, match="cannot extract .*evil.tar.gz"):
        imdb.extract(path, dest)
    assert not (tmp_path / "escaped.txt").exists() and list(dest.iterdir()) == []
