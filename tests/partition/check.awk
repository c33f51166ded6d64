# SPDX-License-Identifier: BSD-3-Clause
# check.awk - the checker: reads the events hold.sh left on the checker's
# Redis, in the checker's own order, each "TIME_US KIND CLIENT FENCE", and
# prints one line of counts:
#   grants     holds begun (enter events)
#   double     grants that began while another client's hold was open:
#              two holders at once, by the checker's single clock
#   writes     read-modify-writes the resource accepted
#   refused    reads and writes the fenced resource refused
#   lost       accepted writes that the counter does not show (writes -
#              counter): updates lost to an overlap
#   dupfence   fences handed to two holds
#   newepoch   holds whose fence carries a failover epoch (2^32 and up:
#              from a master a failover made)
#   gap_ms     the longest time with no hold open, first grant to last
#              (and in brackets: before the fault, during it, after the
#              heal)
# Variables: counter (the counter's final value), fault_at and healed_at
# (µs, the same clock: every namespace shares the machine's).
{
    t = $1; kind = $2; c = $3; f = $4
    if (first == "") first = t
    if (kind == "enter") {
        grants++
        if (open > 0) {
            double++
            if (t < fault_at) dpre++
            else if (t < healed_at) dfault++
            else dpost++
        }
        if (open == 0 && idle_since != "" && t - idle_since > gap)
            gap = t - idle_since
        if (!(c in inside)) { inside[c] = 1; open++ }
        if (f > 0) { seen[f]++; if (seen[f] == 2) dupfence++ }
        if (f >= 4294967296) newepoch++
    } else if (kind == "exit") {
        if (c in inside) { delete inside[c]; open-- }
        if (open == 0) idle_since = t
    } else if (kind == "write-ok") {
        writes++
    } else if (kind ~ /refused/) {
        refused++
    }
}
END {
    printf "grants=%d double=%d(%d/%d/%d) writes=%d refused=%d lost=%d dupfence=%d newepoch=%d gap_ms=%d\n",
        grants, double, dpre, dfault, dpost, writes, refused, writes - counter, dupfence,
        newepoch, gap / 1000
}
