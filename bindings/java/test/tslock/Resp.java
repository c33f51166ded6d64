// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import tslock.legacy.Cache;

/**
 * A minimal RESP client over a Unix socket: the legacy RedisLock's Cache
 * (Jedis is not packaged), and the tests' own look at the server. One
 * command at a time; a connection per thread.
 */
final class Resp implements Cache, AutoCloseable {
    private final SocketChannel ch;
    private final ByteBuffer in = ByteBuffer.allocate(64 * 1024);

    Resp(String socket) {
        try {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(Path.of(socket)));
            in.flip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Send one command; the reply: String, Long, null, or Object[]. */
    synchronized Object call(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StringBuilder sb = new StringBuilder();
        sb.append('*').append(args.length).append("\r\n");
        for (String a : args) {
            byte[] b = a.getBytes(StandardCharsets.UTF_8);
            sb.append('$').append(b.length).append("\r\n");
            out.writeBytes(sb.toString().getBytes(StandardCharsets.UTF_8));
            sb.setLength(0);
            out.writeBytes(b);
            out.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        out.writeBytes(sb.toString().getBytes(StandardCharsets.UTF_8));
        try {
            ByteBuffer buf = ByteBuffer.wrap(out.toByteArray());
            while (buf.hasRemaining())
                ch.write(buf);
            return read();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private int next() throws IOException {
        if (!in.hasRemaining()) {
            in.clear();
            if (ch.read(in) < 0)
                throw new IOException("the server closed the connection");
            in.flip();
        }
        return in.get() & 0xff;
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = next()) != '\r')
            sb.append((char) c);
        next(); /* '\n' */
        return sb.toString();
    }

    private Object read() throws IOException {
        int type = next();
        String l = line();
        switch (type) {
        case '+':
            return l;
        case '-':
            throw new IllegalStateException("server error: " + l);
        case ':':
            return Long.parseLong(l);
        case '$': {
            int n = Integer.parseInt(l);
            if (n < 0)
                return null;
            byte[] b = new byte[n];
            for (int i = 0; i < n; i++)
                b[i] = (byte) next();
            next();
            next();
            return new String(b, StandardCharsets.UTF_8);
        }
        case '*': {
            int n = Integer.parseInt(l);
            if (n < 0)
                return null;
            Object[] a = new Object[n];
            for (int i = 0; i < n; i++)
                a[i] = read();
            return a;
        }
        default:
            throw new IOException("not a RESP reply: " + (char) type);
        }
    }

    @Override
    public String get(String key) {
        return (String) call("GET", key);
    }

    @Override
    public Long setnx(String key, String value) {
        return (Long) call("SETNX", key, value);
    }

    @Override
    public String getSet(String key, String value) {
        return (String) call("GETSET", key, value);
    }

    @Override
    public Long del(String key) {
        return (Long) call("DEL", key);
    }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
