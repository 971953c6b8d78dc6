// An HTTP/2 front for the Node peer gateway (the BFF a team writes without Gather), for the h2c
// benchmarks in bench/run.sh (s0_h2, s1_h2). Preloaded with `node -r`, it makes the peer's one
// `http.createServer(options, handler)` an `http2.createServer` (cleartext h2, prior knowledge)
// with the same handler: node:http2's compatibility API gives the handler request and response
// objects with the node:http interface, so the peer's code runs unchanged. Its downstream calls
// stay HTTP/1.1 keep-alive, as Gather's do.
'use strict';
const http = require('node:http');
const http2 = require('node:http2');

http.createServer = (options, handler) => {
  const server = http2.createServer({
    settings: { maxConcurrentStreams: 100 }, // Gather's http2.max_concurrent_streams default
    maxSessionMemory: 64,
  }, handler);
  // node:http's server has these; the peer calls them on shutdown.
  server.closeIdleConnections = () => {};
  return server;
};
