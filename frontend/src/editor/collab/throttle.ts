// Presence updates that would otherwise go out on every mouse move (a drag's places): at most one
// per interval, and the last one always.

/**
 * `send` at most once per `ms`: a value pushed sooner waits (replaced by any later one) and goes
 * when the interval is up, so the last value always arrives. `flush` sends a waiting value now.
 */
export function throttled<T>(send: (value: T) => void, ms: number) {
  let sentAt = -Infinity;
  let waiting: { value: T } | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const fire = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!waiting) return;
    const { value } = waiting;
    waiting = null;
    sentAt = Date.now();
    send(value);
  };
  return {
    push(value: T): void {
      waiting = { value };
      const wait = sentAt + ms - Date.now();
      if (wait <= 0) fire();
      else if (timer === undefined) timer = setTimeout(fire, wait);
    },
    flush: fire,
    cancel(): void {
      clearTimeout(timer);
      timer = undefined;
      waiting = null;
    },
  };
}
