// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * A lock operation failed. Carries the library's code (a negative
 * {@code TSLOCK_E*} number), its name and the detail the library gave:
 * what was expected and what came, or the server's own error line.
 * Unchecked, so {@link java.util.concurrent.locks.Lock} methods can throw
 * it. Subclasses: {@link LockLostException}, {@link WrongTypeException},
 * {@link UnsupportedException}.
 */
public class LockException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int code;
    private final String errname;

    public LockException(int code, String errname, String message) {
        super(message);
        this.code = code;
        this.errname = errname;
    }

    /** The library's code, such as -5 for {@code TSLOCK_EIO}. */
    public int code() {
        return code;
    }

    /** The code's name, such as {@code "TSLOCK_EIO"}. */
    public String errname() {
        return errname;
    }

    /** The exception for a code, with the library's detail (may be empty). */
    static LockException of(int code, String detail) {
        String name = Native.errname(code);
        String text = Native.strerror(code);
        String msg = name + ": " + text
                     + (detail != null && !detail.isEmpty() ? ": " + detail
                                                            : "");
        switch (code) {
        case Native.ELOST:
            return new LockLostException(code, name, msg);
        case Native.EWRONGTYPE:
            return new WrongTypeException(code, name, msg);
        case Native.EUNSUPPORTED:
            return new UnsupportedException(code, name, msg);
        default:
            return new LockException(code, name, msg);
        }
    }
}
