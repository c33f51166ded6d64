// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** The lock's key holds a value of the wrong Redis type. */
public class WrongTypeException extends LockException {
    private static final long serialVersionUID = 1L;

    public WrongTypeException(int code, String errname, String message) {
        super(code, errname, message);
    }
}
