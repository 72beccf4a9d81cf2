/**
 * backoffDelay is the wait in milliseconds before reconnect attempt
 * `attempt` (0 for the first retry): a uniformly random value in
 * [0, min(max, min·2^attempt)] ("full jitter"), so clients dropped together
 * spread their returns over the whole window instead of arriving in waves.
 * The result is at least 1 ms below the cap only by chance; never negative.
 * @param {number} attempt  0, 1, 2, …
 * @param {number} min      the first window's width in ms (minReconnectDelay)
 * @param {number} max      the cap in ms (maxReconnectDelay)
 * @param {() => number} [rand]  a uniform random number in [0, 1)
 * @returns {number}
 */
export function backoffDelay(attempt: number, min: number, max: number, rand?: () => number): number;
