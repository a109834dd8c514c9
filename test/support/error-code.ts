// What a call ends in, as a test compares it: `ok` when it returns, the code of an error of the expected
// class, or `other: <message>` for anything else (so an unexpected error fails the comparison, naming it).
export function outcomeOf(f: () => unknown, errorClass: abstract new (...args: never[]) => Error & { code: string }): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return e instanceof errorClass ? e.code : `other: ${(e as Error).message}`;
  }
}
