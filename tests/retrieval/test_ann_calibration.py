"""The faiss sidecar's probe count is calibrated at build time, stored, and used after a
restart; filtered and hybrid queries take the sidecar's dense leg."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from codegen.corpus.model import Chunk
from codegen.retrieval.ann import K, RecallTarget, recall_at_k
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import Filters
from codegen.settings import RetrievalSettings

DIM = 32
ROWS = 20_000  # 565 inverted lists: nprobe 16 scans under 3% of them
OLD_CONSTANT = 16  # the probe count every index used before calibration


def _chunks(n: int) -> list[Chunk]:
    return [
        Chunk(
            id=f"c{i:06d}",
            document_id=f"d{i}",
            source="docs" if i % 2 else "local",
            uri=f"file:///src/m{i}.py",
            title=f"t{i}",
            text=f"def f{i}(): return {i}",
            language="python",
            start_line=1,
            end_line=2,
        )
        for i in range(n)
    ]


def _gaussian(n: int, seed: int) -> np.ndarray:
    # No cluster structure: a vector's neighbours spread over many inverted lists, so a few
    # probes miss most of them (unlike the clustered vectors the old constant was tuned on).
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _recalls(store: LanceDBStore, data: np.ndarray, queries: np.ndarray, **search) -> np.ndarray:
    out = []
    for q in queries:
        kth = float(np.sort(data @ q)[-K])
        hits = store.search("", q, K, mode="vector", **search)
        out.append(recall_at_k(np.array([h.score for h in hits]), kth))
    return np.array(out)


@pytest.fixture(scope="module")
def gaussian_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    uri = tmp_path_factory.mktemp("calibrated") / "lance"
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    store.reset("test-embedder", DIM)
    data = _gaussian(ROWS, seed=1)
    store.upsert(_chunks(ROWS), data)
    store.refresh()
    return uri, data


def test_calibration_meets_the_target_where_the_old_constant_does_not(
    gaussian_index: tuple[Path, np.ndarray],
) -> None:
    uri, data = gaussian_index
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    info = store.ann_info()
    assert info is not None
    calibrated = info["nprobe"]
    assert calibrated > OLD_CONSTANT
    own = info["calibration"]["at_nprobe"]["own_sample"]
    assert own["recall_at_10_mean"] >= 0.95 and own["recall_at_10_min"] >= 0.5
    # Fresh queries from the data's distribution, never seen by the calibration.
    fresh = _gaussian(200, seed=2)
    store.faiss_nprobe = OLD_CONSTANT
    old = _recalls(store, data, fresh)
    store.faiss_nprobe = None  # back to the stored, calibrated count
    new = _recalls(store, data, fresh)
    assert old.mean() < 0.9  # the constant fails on this distribution...
    assert new.mean() >= 0.94 and new.min() >= 0.5  # ...the calibrated count meets the target


def test_a_higher_target_calibrates_more_probes(tmp_path: Path) -> None:
    data = _gaussian(5000, seed=3)
    counts = []
    for mean in (0.8, 0.99):
        store = LanceDBStore(
            uri=str(tmp_path / f"lance-{mean}"),
            ann_min_rows=1000,
            recall_target=RecallTarget(mean=mean, minimum=0.0),
        )
        store.reset("test-embedder", DIM)
        store.upsert(_chunks(len(data)), data)
        store.refresh()
        info = store.ann_info()
        assert info is not None
        counts.append(info["nprobe"])
        assert info["calibration"]["at_nprobe"]["own_sample"]["recall_at_10_mean"] >= mean
    assert counts[0] < counts[1]


def test_the_stored_probe_count_survives_a_restart(
    gaussian_index: tuple[Path, np.ndarray], isolated_home: Path
) -> None:
    uri, _ = gaussian_index
    stored = json.loads(Path(f"{uri}/chunks.faiss.json").read_text())["nprobe"]
    reopened = LanceDBStore(uri=str(uri))  # a new process: nothing but the files on disk
    sidecar = reopened._faiss()
    assert sidecar is not None and sidecar.nprobe == stored
    assert reopened.ann_info()["nprobe"] == stored

    from codegen.orchestration.cli.info import info

    (isolated_home / "codegen.toml").write_text(f'[retrieval]\nlancedb_uri = "{uri}"\n')
    shown = CliRunner().invoke(info, ["--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["ann_index"]["nprobe"] == stored
    text = CliRunner().invoke(info, [])
    assert f"nprobe {stored} (calibrated" in text.output


def test_filtered_search_uses_the_sidecar_and_matches_exact_search_over_the_kept_rows(
    gaussian_index: tuple[Path, np.ndarray],
) -> None:
    uri, data = gaussian_index
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    odd = np.arange(1, ROWS, 2)  # source "docs"
    recalls = []
    for q in _gaussian(50, seed=4):
        hits = store.search("", q, K, mode="vector", filters=Filters(source="docs"))
        assert len(hits) == K and all(h.source == "docs" for h in hits)
        kth = float(np.sort(data[odd] @ q)[-K])
        recalls.append(recall_at_k(np.array([h.score for h in hits]), kth))
    assert np.mean(recalls) >= 0.95
    none = Filters(source="docs", language="rust")
    assert store.search("", data[1], K, mode="vector", filters=none) == []


def test_settings_and_the_store_share_the_recall_target() -> None:
    r = RetrievalSettings()
    assert (r.ann_recall_mean, r.ann_recall_min) == (RecallTarget().mean, RecallTarget().minimum)


def test_hybrid_through_the_sidecar_ranks_as_lancedb_hybrid_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(300)]
    chunks = [
        Chunk(
            id=f"c{i:05d}",
            document_id=f"d{i}",
            source="docs" if i % 2 else "local",
            uri=f"file:///src/m{i}.py",
            title=f"t{i}",
            text=" ".join(rng.choice(words, 6)),
            language="python",
            start_line=1,
            end_line=2,
        )
        for i in range(3000)
    ]
    data = _gaussian(len(chunks), seed=6)
    today = LanceDBStore(uri=str(tmp_path / "today"))  # below ann_min_rows: LanceDB's hybrid
    today.reset("test-embedder", DIM)
    today.upsert(chunks, data)
    today.refresh()
    # Every probe (recall 1 demanded): the dense legs agree, so any difference is the fusion's.
    forced = LanceDBStore(
        uri=str(tmp_path / "forced"),
        ann_min_rows=1,
        recall_target=RecallTarget(mean=1.0, minimum=1.0),
    )
    forced.reset("test-embedder", DIM)
    forced.upsert(chunks, data)
    forced.refresh()
    assert forced.ann_info() is not None and today.ann_info() is None
    for i, q in enumerate(_gaussian(40, seed=7)):
        text = " ".join(rng.choice(words, 2))
        filters = Filters(source="docs") if i % 2 else Filters()
        ours = forced.search(text, q, K, mode="hybrid", filters=filters)
        theirs = today.search(text, q, K, mode="hybrid", filters=filters)
        assert [h.chunk_id for h in ours] == [h.chunk_id for h in theirs]
        assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-6)


def test_hits_carry_exact_similarities_although_the_lists_hold_float16(
    gaussian_index: tuple[Path, np.ndarray],
) -> None:
    uri, data = gaussian_index
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    sidecar = store._faiss()
    assert sidecar is not None
    assert sidecar.index.code_size == 2 * DIM  # float16 lists
    for q in _gaussian(20, seed=8):
        hits = store.search("", q, K, mode="vector", filters=Filters(source="docs"))
        hits += store.search("", q, K, mode="vector")
        for hit in hits:
            row = int(hit.chunk_id[1:])
            # float32 cosine of the stored vector: the rescoring's, not float16's (~1e-4 off)
            assert hit.score == pytest.approx(float(data[row] @ q), abs=1e-6)


def test_filtered_search_probes_as_many_lists_as_unfiltered(
    gaussian_index: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    uri, _ = gaussian_index
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    sidecar = store._faiss()
    assert sidecar is not None
    probes: list[int] = []
    original = faiss.SearchParametersIVF

    def recording(**kwargs: object) -> object:
        probes.append(int(kwargs["nprobe"]))  # type: ignore[call-overload]
        return original(**kwargs)

    monkeypatch.setattr(faiss, "SearchParametersIVF", recording)
    store.search("", _gaussian(1, seed=9)[0], K, mode="vector", filters=Filters(source="docs"))
    # Half the rows kept, k found at the calibrated count: no widening to nprobe / share.
    assert probes == [sidecar.nprobe]


def test_hybrid_runs_the_bm25_leg_beside_the_dense_leg(
    gaussian_index: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    uri, _ = gaussian_index
    store = LanceDBStore(uri=str(uri), ann_min_rows=1000)
    store.build_keyword_index()
    threads: list[str] = []
    original = LanceDBStore._keyword_query

    def recording(self: LanceDBStore, *args: object) -> object:
        threads.append(threading.current_thread().name)
        return original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(LanceDBStore, "_keyword_query", recording)
    hits = store.search("f12", _gaussian(1, seed=10)[0], K, mode="hybrid")
    assert len(hits) == K
    assert threads and threads[0].startswith("codegen-bm25")


def test_lists_are_probed_by_their_best_sub_centroid(
    gaussian_index: tuple[Path, np.ndarray],
) -> None:
    from codegen.retrieval.ann import RADIUS_WEIGHT, SUBS

    uri, data = gaussian_index
    sidecar = LanceDBStore(uri=str(uri), ann_min_rows=1000)._faiss()
    assert sidecar is not None and sidecar.radius is not None and sidecar.subs is not None
    nlist = sidecar.index.nlist
    assert sidecar.subs.shape == (nlist, SUBS, data.shape[1] + 1)
    centroids = sidecar.index.quantizer.reconstruct_n(0, nlist)
    _, assigned = sidecar.index.quantizer.search(data, 1)
    for c in (0, 7, 100):  # every member lies within some sub-centroid's radius
        members = data[assigned[:, 0] == c]
        far = float(np.max(np.linalg.norm(members - centroids[c], axis=1)))
        assert sidecar.radius[c] == pytest.approx(far, abs=1e-3)  # float16 residuals
        subs, reach = sidecar.subs[c, :, :-1], sidecar.subs[c, :, -1]
        gaps = np.linalg.norm(members[:, None, :] - subs[None], axis=2) - reach
        assert np.all(gaps.min(axis=1) <= 1e-3)
    q = _gaussian(1, seed=11)
    lists, coarse = sidecar._order.lists(q, 8)
    best = (sidecar.subs[:, :, :-1] @ q[0] + RADIUS_WEIGHT * sidecar.subs[:, :, -1]).max(axis=1)
    assert list(lists[0]) == list(np.argsort(-best, kind="stable")[:8])
    assert coarse[0] == pytest.approx(centroids[lists[0]] @ q[0], abs=1e-5)
