import * as yup from 'yup';

const runParams = yup.object({ run_id: yup.string().required() });

export const ReadRun = { params: runParams };
export const CancelRun = { params: runParams };

/** Following a run's events, resuming after Last-Event-ID (an id this stream gave out). */
export const FollowRunEvents = {
  params: runParams,
  headers: yup.object({ 'last-event-id': yup.string().matches(/^\d+-\d+$/, 'Last-Event-ID must be an event id from this stream.') }),
};
