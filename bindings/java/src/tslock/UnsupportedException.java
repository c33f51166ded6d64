// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** The server (or the scheme chosen) cannot do what was asked, as fair mode or a read-write lock on Redis 2.0. */
public class UnsupportedException extends LockException {
    private static final long serialVersionUID = 1L;

    public UnsupportedException(int code, String errname, String message) {
        super(code, errname, message);
    }
}
