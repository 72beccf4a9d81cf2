/**
 * Emitter calls listeners registered with on(event, fn) in registration
 * order. A listener that throws is reported to onListenerError and does
 * not stop the others.
 * @template {Record<string, any>} Events
 */
export class Emitter<Events extends Record<string, any>> {
    /** @type {Map<keyof Events, Set<(payload: any) => void>>} */
    _listeners: Map<keyof Events, Set<(payload: any) => void>>;
    /** @type {(err: unknown) => void} */
    onListenerError: (err: unknown) => void;
    /**
     * on registers fn for event and returns a function that removes it.
     * @template {keyof Events} K
     * @param {K} event
     * @param {(payload: Events[K]) => void} fn
     * @returns {() => void}
     */
    on<K extends keyof Events>(event: K, fn: (payload: Events[K]) => void): () => void;
    /**
     * off removes fn from event.
     * @template {keyof Events} K
     * @param {K} event
     * @param {(payload: Events[K]) => void} fn
     */
    off<K extends keyof Events>(event: K, fn: (payload: Events[K]) => void): void;
    /**
     * emit calls event's listeners with payload.
     * @template {keyof Events} K
     * @param {K} event
     * @param {Events[K]} payload
     */
    emit<K extends keyof Events>(event: K, payload: Events[K]): void;
}
