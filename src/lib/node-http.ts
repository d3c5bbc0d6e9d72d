// node:http for keyward's own modules. An ES import of node:http builds the module's whole
// namespace, and three of its exports (WebSocket, CloseEvent, MessageEvent) are getters that load
// Node's bundled copy of undici (fetch and WebSocket, 0.75 MB of source) that keyward never runs:
// its requests go through the undici package. With keyward's modules loaded that copy holds
// 0.9 MB of heap and 1.5 MB of resident memory (14 MB in an otherwise bare process).
// process.getBuiltinModule returns the CommonJS module as it is: no namespace, no getter called.
export const nodeHttp = process.getBuiltinModule("node:http");
