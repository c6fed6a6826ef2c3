"""Exit 0 when a PostgreSQL answers at the URL given, 1 otherwise (scripts/test.sh, `make bench`).

    .venv/bin/python scripts/pg_reachable.py postgres://postgres@127.0.0.1:5432/test
"""

import sys

import dj_database_url
import psycopg

config = dj_database_url.parse(sys.argv[1])
try:
    psycopg.connect(host=config["HOST"], port=config["PORT"] or 5432, user=config["USER"],
                    password=config["PASSWORD"] or None, dbname=config["NAME"], connect_timeout=3).close()
except psycopg.Error:
    sys.exit(1)
