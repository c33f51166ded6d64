# SPDX-License-Identifier: BSD-3-Clause
# history.awk - the clients' own history checked against a mutex model.
# Input: every client's history (worker.sh), one attempt a line,
#   INVOKE_US START_US END_US DONE_US RC CLIENT
# sorted or not.  A hold is [START, END]: the lock was granted before
# START (tslock ran the command only once it held the lock) and its
# release was asked for after END, so two holds whose intervals overlap
# were held at the same instant, by the machine's one clock, whatever the
# servers said.  The model: each grant ends before the next begins,
# unless one of the two clients was told its lease was lost (RC 75, the
# loss report) -- a lease can end under a holder; what it must not do is
# end silently.  Prints one line:
#   hist_holds      holds (attempts with a START)
#   hist_violations pairs of overlapping holds where neither client was
#                   told of a loss: the mutex model broken
#   hist_excused    overlapping pairs where a client was told (RC 75)
#   hist_errors     attempts that ended in an error (RC not 0, 1 busy, 75)
#   hist_lost       loss reports (RC 75)
$2 != "-" {
    n++
    s[n] = $2 + 0; e[n] = $3 + 0; rc[n] = $5 + 0; who[n] = $6
}
$5 != 0 && $5 != 1 && $5 != 75 { errors++ }
$5 == 75 { lost++ }
END {
    # Sort the holds by START (insertion sort: a run has hundreds).
    for (i = 2; i <= n; i++) {
        ks = s[i]; ke = e[i]; kr = rc[i]; kw = who[i]
        for (j = i - 1; j >= 1 && s[j] > ks; j--) {
            s[j + 1] = s[j]; e[j + 1] = e[j]; rc[j + 1] = rc[j]; who[j + 1] = who[j]
        }
        s[j + 1] = ks; e[j + 1] = ke; rc[j + 1] = kr; who[j + 1] = kw
    }
    for (i = 2; i <= n; i++)
        for (j = i - 1; j >= 1; j--) {
            if (e[j] <= s[i] || who[j] == who[i])
                continue
            if (rc[i] == 75 || rc[j] == 75) excused++
            else violations++
        }
    printf "hist_holds=%d hist_violations=%d hist_excused=%d hist_errors=%d hist_lost=%d\n",
        n, violations, excused, errors, lost
}
