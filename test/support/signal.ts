/** A promise and the function that resolves it (Node 20 has no Promise.withResolvers). */
export function wakeSignal(): [Promise<void>, () => void] {
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  return [woken, wake];
}
