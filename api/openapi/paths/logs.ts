import { ListLogs } from '../../routes/logs/schema';
import { cursorList } from '../components';
import { closed, integer, oneOfValues, orNull, publicId, ref, string, timestamp } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';
import { RUN_STATUSES } from '../errors';

export const logs: Resource = {
  schemas: {
    LogEntry: closed(
      {
        id: publicId('log'),
        run: publicId('run'),
        agent: string(),
        status: oneOfValues(RUN_STATUSES),
        latency_ms: integer({ minimum: 0 }),
        model: string(),
        usage: ref('Usage'),
        usage_estimated: { type: 'boolean', description: 'The provider reported no usage: the service counted the tokens (a real tokenizer for known OpenAI models, else an estimate) and billed that.' },
        refused: { type: 'boolean', description: 'The model refused: the run completed with a refusal output item.' },
        history_omitted: integer({ minimum: 0, description: "Earlier messages of the conversation that memory would have sent but were left out, oldest first and whole turns at a time, to fit the model's context window (or the run's reservation). 0 for runs without memory." }),
        tool_names: { type: 'array', items: string() },
        error_code: orNull(ref('ErrorCode')),
        uncharged_credits: integer({
          minimum: 0,
          description: "Credits of the run's real cost above what it reserved, not charged: a run is never charged more than its reservation. 0 almost always; the history a run sends is cut to what its reservation counted.",
        }),
        knowledge: { type: 'array', description: 'What retrieval used: ids and ranks, never text.', items: closed({ chunk: publicId('chunk'), document: publicId('document'), rank: integer() }) },
        created_at: timestamp(),
      },
      { description: 'Execution metadata of one run; never transcript content.' },
    ),
  },
  paths: {
    '/api/v2/logs': {
      get: operation('get', {
        id: 'listLogs',
        summary: 'List execution logs',
        description: 'Newest first. Pages with `cursor` in and `next` out.',
        tag: 'Logs',
        access: { credential: 'workspace', scopes: ['logs:read'] },
        request: ListLogs,
        responses: { '200': json('A page of log entries.', cursorList(ref('LogEntry'), 'next')) },
      }),
    },
  },
};
