#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs tests/check_oldredis: the oldredis proxy against
# shared/REDIS-VERSIONS.md for Redis 2.0.5, 2.2.15, 2.4.18, 2.6.0 and
# 2.6.11, over redis-servers it starts (and stops) itself.
#
# Environment (set by TESTS_ENVIRONMENT): top_builddir, REDIS_SERVER.
# OLDREDIS_WRAPPER, if set, prefixes the proxy, e.g.
#   OLDREDIS_WRAPPER="valgrind -q --leak-check=full --error-exitcode=99"
set -u
b="${top_builddir:-.}"
srv="${REDIS_SERVER:-}"
[ -n "$srv" ] || srv=$(command -v redis-server 2>/dev/null || true)
if [ -z "$srv" ]; then
    echo "check-oldredis: redis-server not found (set REDIS_SERVER)" >&2
    exit 1
fi
exec "$b/tests/check_oldredis" "$b/tests/oldredis" "$srv"
