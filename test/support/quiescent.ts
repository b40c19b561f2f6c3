/** `terminals.stats()` of a terminal service that holds nothing: no terminal, timer, listener or PTY worker (D2, D3). */
export const TERMINALS_QUIESCENT = Object.freeze({
  open: 0,
  busy: 0,
  timers: 0,
  hostAlive: false,
  listeners: 0,
  deliveries: 0,
});
