/** Open WebUI's chat history: a tree of messages keyed by id, `currentId` the leaf shown. */
export interface ToolCall {
  id?: string;
  type?: string;
  index?: number;
  function?: { name?: string; arguments?: string };
}

export interface HistoryMessage {
  id: string;
  parentId: string | null;
  childrenIds: string[];
  role: 'user' | 'assistant' | 'system' | string;
  content: unknown;
  model?: string;
  models?: string[];
  timestamp?: number;
  done?: boolean;
  stopped?: boolean;
  error?: unknown;
  reasoning_content?: string;
  reasoning?: string;
  tool_calls?: ToolCall[];
  output?: unknown;
  selectedModelId?: string;
  arena?: boolean;
  [key: string]: unknown;
}

export interface History {
  messages: Record<string, HistoryMessage>;
  currentId: string | null;
}

/** Open WebUI's chat JSON (a stored chat's `chat`) as the view reads it. */
export interface ChatContent {
  title?: string;
  models?: string[];
  history?: Partial<History>;
  [key: string]: unknown;
}
