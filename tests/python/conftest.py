"""Fixtures of the Python binding tests: the shared folder, the seed module, lowprec."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("LOWPREC_SHARED", ROOT.parent / "shared"))
SEEDS = SHARED / "seeds"
VECTORS = pathlib.Path(os.environ.get("LOWPREC_VECTORS", SHARED / "vectors"))

sys.path.insert(0, str(SEEDS))


@pytest.fixture(scope="session")
def numfmt():
    if not (SEEDS / "numfmt.py").exists():
        pytest.fail(f"the seed numfmt.py is not in {SEEDS} (set LOWPREC_SHARED)")
    import numfmt as m
    return m
