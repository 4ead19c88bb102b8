/** A path the model gave that leaves working-memory/ or is otherwise refused: a tool error the model can read and correct. */
export class PathRefusedError extends Error {
  override name = 'PathRefusedError';
}
