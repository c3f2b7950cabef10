import { estimateTokens as tokens, type Usage } from '../../domain/usage';
import type { ChatMessage, ModelProvider, ModelReply, ModelRequest } from './types';


function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'user') return m.content;
  }
  return '';
}

/**
 * Deterministic, offline provider for the one-machine stack: it answers by quoting the request, so a
 * person trying the service sees their input travel through every layer without any network.
 */
export class LocalProvider implements ModelProvider {
  readonly name = 'local' as const;

  async complete(request: ModelRequest): Promise<ModelReply> {
    const prompt = lastUserText(request.messages);
    const text = request.responseFormat ? JSON.stringify({ echo: prompt.slice(0, 200) }) : `You said: ${prompt}`;
    if (request.onTextDelta) {
      for (const piece of text.match(/\S+\s*/g) ?? [text]) {
        if (request.signal?.aborted) break;
        request.onTextDelta(piece);
      }
    }
    const input = request.messages.reduce((n, m) => n + tokens(m.content ?? ''), 0);
    const output = tokens(text);
    const usage: Usage = { input_tokens: input, output_tokens: output, total_tokens: input + output, cached_tokens: 0 };
    return { text, toolCalls: [], usage, model: request.model || 'local' };
  }
}
