import { Job, JobList, JobWithCancel, JobWithItems } from '../../../domain/jobRecord';
import { CancelJob, CreateJob, ListJobs, ReadJob } from '../../routes/jobs/schema';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, LOCATION, operation, type Resource } from '../operation';

export const jobs: Resource = {
  schemas: { Job, JobWithCancel, JobWithItems },
  paths: {
    '/api/v2/jobs': {
      post: operation('post', {
        id: 'createJob',
        summary: 'Create a job',
        description: 'Queues work over many items, each checked before anything is accepted (a 400 names the item: `items[3]: …`). The body\'s `idempotency_key` means what the header means; both given and different is a 400. Needs credit.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:create'] },
        request: CreateJob,
        responses: { '202': json('Accepted: the job as it stands; poll `Location`.', ref('Job'), { ...LOCATION, ...replayMarker('Idempotent-Replay') }) },
        errors: ['usage_blocked', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listJobs',
        summary: 'List jobs',
        description: 'The one v2 list paged by offset: no cursor, and a page taken while jobs are created can repeat or skip one.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:read'] },
        request: ListJobs,
        responses: { '200': json('A page of jobs.', JobList) },
      }),
    },
    '/api/v2/jobs/{id}': {
      get: operation('get', {
        id: 'getJob',
        summary: 'Read a job and a page of its items',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:read'] },
        request: ReadJob,
        responses: { '200': json('The job.', ref('JobWithItems')) },
        errors: ['job_not_found'],
      }),
    },
    '/api/v2/jobs/{id}/cancel': {
      post: operation('post', {
        id: 'cancelJob',
        summary: 'Cancel a job',
        description: 'No body. Idempotent, finished jobs included: answered with the job as it stands. Items not yet started are cancelled; running runs are cancelled.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:cancel'] },
        request: CancelJob,
        responses: { '200': json('The job as it stands.', ref('JobWithCancel')) },
        errors: ['job_not_found'],
      }),
    },
  },
};
