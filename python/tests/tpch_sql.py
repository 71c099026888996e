"""The 22 TPC-H queries in standard SQL (the specification's texts with its validation
parameters): DuckDB's reference answers in test_tpch.py, and the texts that
``tpch run --sql`` and ``ts.sql`` translate. The one copy of the texts is
``examples/tpch/sql/q<N>.sql``; tables are views named as in the specification."""

from pathlib import Path

_DIR = Path(__file__).resolve().parents[2] / "examples" / "tpch" / "sql"

SQL = {n: (_DIR / f"q{n}.sql").read_text() for n in range(1, 23)}
