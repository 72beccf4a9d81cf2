// A minimal typed event emitter shared by the client and its messages.

/**
 * Emitter calls listeners registered with on(event, fn) in registration
 * order. A listener that throws is reported to onListenerError and does
 * not stop the others.
 * @template {Record<string, any>} Events
 */
export class Emitter {
  constructor() {
    /** @type {Map<keyof Events, Set<(payload: any) => void>>} */
    this._listeners = new Map();
    /** @type {(err: unknown) => void} */
    this.onListenerError = (err) => { setTimeout(() => { throw err; }, 0); };
  }

  /**
   * on registers fn for event and returns a function that removes it.
   * @template {keyof Events} K
   * @param {K} event
   * @param {(payload: Events[K]) => void} fn
   * @returns {() => void}
   */
  on(event, fn) {
    let set = this._listeners.get(event);
    if (!set) this._listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => this.off(event, fn);
  }

  /**
   * off removes fn from event.
   * @template {keyof Events} K
   * @param {K} event
   * @param {(payload: Events[K]) => void} fn
   */
  off(event, fn) {
    const set = this._listeners.get(event);
    if (set) set.delete(fn);
  }

  /**
   * emit calls event's listeners with payload.
   * @template {keyof Events} K
   * @param {K} event
   * @param {Events[K]} payload
   */
  emit(event, payload) {
    const set = this._listeners.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(payload);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
