import * as yup from 'yup';
import { invalidRequest } from '../../domain/errors';

/** Runs a yup schema and turns its first complaint into a 400 in the envelope. */
export function validated<T>(schema: yup.Schema<T>, value: unknown): T {
  try {
    return schema.validateSync(value ?? {}, { abortEarly: true });
  } catch (err) {
    if (err instanceof yup.ValidationError) throw invalidRequest(err.errors[0] ?? 'Invalid request.');
    throw err;
  }
}
