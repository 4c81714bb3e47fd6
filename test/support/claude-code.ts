/**
 * The shape of a request Claude Code (2.1) sends to `POST /v1/messages?beta=true`, recorded from the real CLI with
 * its texts shortened: its beta features in `anthropic-beta`, a system turn in the middle of the conversation, adaptive
 * thinking, context management, an effort setting, cache_control on system and user blocks, and its tools.
 */
export const CLAUDE_CODE_BETAS = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'context-management-2025-06-27',
  'prompt-caching-scope-2026-01-05',
  'mid-conversation-system-2026-04-07',
  'effort-2025-11-24',
];

export const CLAUDE_CODE_PROMPT = 'Say hello from tollgate';

export function claudeCodeBody(model: string, maxTokens = 64_000) {
  return {
    model,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: "<system-reminder>\nToday's date is 2026-11-26.\n</system-reminder>" },
          { type: 'text', text: CLAUDE_CODE_PROMPT, cache_control: { type: 'ephemeral' } },
        ],
      },
      { role: 'system', content: 'Available agent types for the Agent tool:\n- Explore: fast read-only search.' },
    ],
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=sdk-cli;' },
      {
        type: 'text',
        text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.",
        cache_control: { type: 'ephemeral' },
      },
      {
        type: 'text',
        text: 'You are an interactive agent that helps users with software engineering tasks.',
        cache_control: { type: 'ephemeral' },
      },
    ],
    tools: [
      {
        name: 'Bash',
        description: 'Executes a bash command and returns its output.',
        input_schema: {
          type: 'object',
          properties: { command: { type: 'string', description: 'The command to execute' } },
          required: ['command'],
          additionalProperties: false,
        },
      },
      {
        name: 'Read',
        description: 'Reads a file from the local filesystem.',
        input_schema: {
          type: 'object',
          properties: { file_path: { type: 'string', description: 'The absolute path to the file to read' } },
          required: ['file_path'],
          additionalProperties: false,
        },
      },
    ],
    metadata: { user_id: '{"device_id":"41118465","account_uuid":"","session_id":"5d949385"}' },
    max_tokens: maxTokens,
    thinking: { type: 'adaptive' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
    stream: true,
  };
}
