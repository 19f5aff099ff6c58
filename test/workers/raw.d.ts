/** Vite's `?raw` imports (a file's text), which the workers tests use to read the docs they check. */
declare module "*?raw" {
  const text: string;
  export default text;
}
