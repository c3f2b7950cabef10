import * as yup from 'yup';
import { isPublicId, publicIdPattern, type IdKind } from '../domain/ids';

/** A body field naming a resource by its public id (`what` words the refusal: "document must be a document id (doc_…)"). */
export const publicIdField = (name: string, kind: IdKind, what: string) =>
  yup
    .string()
    .test(name, `${name} must be ${what}`, (v) => v === undefined || isPublicId(kind, v))
    .meta({ jsonSchema: { pattern: publicIdPattern(kind) } });
