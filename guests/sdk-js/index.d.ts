// Types of @wonopcode/guest (wonopcode:agent-loop@0.3.0 as componentize-js presents it:
// records are objects with camelCase fields, variants `{ tag, val }`, u64 a BigInt).

/** Thrown from runPrompt to end the turn with one line. */
export class LoopFailed extends Error {}
/** Thrown by Spawn.run/start when the child could not start: the host's line. */
export class SpawnFailed extends Error {}

/** A tool call the model made. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** An argument's type: a trailing `?` makes it optional. */
export type ParameterType =
  | 'string' | 'number' | 'integer' | 'boolean'
  | 'string?' | 'number?' | 'integer?' | 'boolean?';

/** A custom tool. */
export interface ToolSpec {
  name: string;
  description?: string;
  /** Each argument's type, or a whole JSON Schema object. */
  parameters?: Record<string, ParameterType> | { type: 'object'; [key: string]: unknown };
  /** Returns the text the model reads; a throw is a failed call. */
  run(args: Record<string, unknown>): string | number | boolean;
}

/** A loop's custom tools. */
export class Tools {
  tool(spec: ToolSpec): this;
  has(name: string): boolean;
  register(): void;
  dispatch(name: string, args: string): [string, boolean];
  runShown(call: ToolCall): [string, boolean];
}

/** The standard loop. */
export class Agent {
  constructor(options?: { tools?: Tools; offered?: string[]; maxRounds?: number });
  run(prompt: string): string;
  resume(): string;
}

/** Narrows this context's enabled tools to those of `names` it has; returns them. */
export function keepOnlyTools(...names: string[]): string[];

export const Tier: Readonly<{ FAST: 0; STRONG: 1; DEEP: 2 }>;
export type Tier = 0 | 1 | 2;
export const TIERS: Readonly<Record<string, readonly [string, string, string]>>;
export function tierModel(tier: Tier): string | undefined;

export type ContextStatus =
  | { tag: 'completed' } | { tag: 'cancelled' } | { tag: 'max-iterations-reached' }
  | { tag: 'token-limit-reached' } | { tag: 'timeout' } | { tag: 'error'; val: string }
  | { tag: 'suspended'; val: string } | { tag: 'budget-exceeded'; val: string };

export interface ContextResult {
  response: string;
  data?: string;
  usage: { inputTokens: bigint; outputTokens: bigint; totalCostMicrocents?: bigint };
  status: ContextStatus;
  modifiedFiles: string[];
  durationMs: bigint;
}

/** A child that lives on (the WIT `child` resource). */
export interface Child {
  id(): string;
  send(message: string): void;
  wait(): ContextResult;
  poll(): ContextResult | undefined;
  state(): 'working' | 'answered' | 'idle';
  cancel(): void;
  fork(task: string): Child;
}

export interface Attachment {
  mediaType: string;
  data: Uint8Array;
  name?: string;
}

/** A child to start, with the parent's settings as defaults. */
export class Spawn {
  request: Record<string, unknown>;
  static named(name: string, task: string): Spawn;
  static same(task: string): Spawn;
  static path(path: string, task: string): Spawn;
  allow(...tools: string[]): this;
  deny(...tools: string[]): this;
  model(model: string, provider?: string): this;
  tier(tier: Tier): this;
  systemPrompt(prompt: string): this;
  limits(limits: { maxIterations?: number; maxTokens?: number; timeoutMs?: number }): this;
  customData(data: unknown): this;
  inheritMessages(): this;
  grants(grants: {
    sandbox?: 'read-only' | 'workspace-write' | 'full-access';
    write?: string[];
    read?: string[];
    network?: string[];
    maxProcesses?: number;
    maxCostUsd?: number;
  }): this;
  generation(generation: { thinking?: string; maxOutputTokens?: number; temperature?: number }): this;
  attach(attachments: Attachment[]): this;
  run(): ContextResult;
  start(): Child;
}

export function spawnAll(children: Spawn[], maxConcurrent?: number): (ContextResult | SpawnFailed)[];
/** The state key whose value a child's result carries as its `data`. */
export const RESULT_DATA_KEY: '__result_data__';
/** Gives the parent structured data as this context's result's `data` (JSON unless a string). */
export function setResultData(data: unknown): void;
export function spawnRequest(): Record<string, unknown> | undefined;
export function statusText(status: ContextStatus): string;
export function spent(result: ContextResult): string;
export function describe(result: ContextResult): string;

/** A loop: its name, and optionally its prompt handler and custom tools. */
export interface Loop {
  name: string;
  runPrompt?(prompt: string): string;
  tools?: Tools;
}

/** The exports componentize-js looks for, serving `loop`. */
export function exportLoop(loop: Loop): { agentLoop: object; customToolHandler: object };

/** The host's interfaces, for what the helpers above do not cover. */
export const context: Record<string, (...args: any[]) => any>;
export const customTools: Record<string, (...args: any[]) => any>;
export const providers: Record<string, (...args: any[]) => any>;
export const storage: Record<string, (...args: any[]) => any>;
export const system: Record<string, (...args: any[]) => any>;
export const hostTools: Record<string, (...args: any[]) => any>;
export const ui: Record<string, (...args: any[]) => any>;
