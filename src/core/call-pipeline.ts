/**
 * The one loop that runs a call's interceptors (`admit`, `complete`) in order, whether each answers
 * at once or with a promise. Answers given at once go on in the same turn (no promise, no closure):
 * only an interceptor that answers with a promise makes the call wait for it, and the caller resumes
 * the loop after it once that promise settles.
 */

/**
 * Asks `ask` of each of `interceptors` in order from `index`. An answer given at once goes to
 * `take`, which returns false to stop there. An answer given as a promise, or a throw (made a
 * rejected promise, so both are handled in one place), goes to `wait` with the interceptor and its
 * index, and the loop stops: the caller resumes from `index + 1` when the promise settles.
 *
 * Returns true when every interceptor answered at once and `take` never stopped the loop: the
 * caller then goes on in the same turn.
 */
export function runInterceptors<A, I = unknown>(
  interceptors: readonly I[],
  index: number,
  ask: (interceptor: I) => A | Promise<A>,
  take: (answer: A) => boolean,
  wait: (answer: Promise<A>, interceptor: I, index: number) => void,
): boolean {
  for (let i = index; i < interceptors.length; i++) {
    const interceptor = interceptors[i] as I;
    let answer: A | Promise<A>;
    try {
      answer = ask(interceptor);
    } catch (error) {
      answer = Promise.reject(error);
    }
    if (answer instanceof Promise) {
      wait(answer, interceptor, i);
      return false;
    }
    if (!take(answer)) return false;
  }
  return true;
}
