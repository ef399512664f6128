/** A terminal stand-in for Progress in tests: its own lines are not what the tests look at. */
export const quietTerminal = { write: () => true, isTTY: false } as unknown as NodeJS.WriteStream;
