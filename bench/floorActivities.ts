/** The floor's one activity does nothing, so what the floor measures is Temporal's own cost. */
export async function noop(): Promise<void> {}
