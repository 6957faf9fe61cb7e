/* global PARAMS */
// Runs inside the cluster; PARAMS: { host, port, timeoutMs, path? }. Opens one TCP connection
// and prints how it went: connected (and with a path, the HTTP status of a GET over it),
// refused (RST), or timeout (dropped: what a NetworkPolicy usually does).
import { connect } from 'node:net';
const { host, port, timeoutMs, path } = PARAMS;
const outcome = await new Promise((resolve) => {
  const socket = connect({ host, port });
  const timer = setTimeout(() => {
    socket.destroy();
    resolve({ outcome: 'timeout' });
  }, timeoutMs);
  socket.once('error', (err) => {
    clearTimeout(timer);
    resolve({ outcome: err.code === 'ECONNREFUSED' ? 'refused' : 'error', code: err.code });
  });
  socket.once('connect', () => {
    clearTimeout(timer);
    if (path === undefined) {
      socket.destroy();
      return resolve({ outcome: 'connected' });
    }
    let head = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => {
      head += d;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (m) {
        socket.destroy();
        resolve({ outcome: 'connected', status: Number(m[1]) });
      }
    });
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUSER-ID: e2e-netpol\r\nConnection: close\r\n\r\n`,
    );
    setTimeout(() => resolve({ outcome: 'connected', status: 0 }), timeoutMs).unref();
  });
});
console.log(JSON.stringify(outcome));
