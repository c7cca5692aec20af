/** Builds a guest on @wonopcode/guest into a component with componentize-js. */
export function build(options: {
  /** The loop's source file (its directory is the project). */
  source: string;
  /** The WIT directory (default `wit`). */
  wit?: string;
  /** The component to write. */
  out: string;
  /** The world (default `agent-loop-world`). */
  world?: string;
}): Promise<void>;
