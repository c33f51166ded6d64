// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** The hold was lost: its lease ran out, or another owner (a legacy timestamp client, an operator's break) took the key. Mutual exclusion may have been broken while it was held. */
public class LockLostException extends LockException {
    private static final long serialVersionUID = 1L;

    public LockLostException(int code, String errname, String message) {
        super(code, errname, message);
    }
}
