import * as yup from 'yup';
import { about } from '../../../contract/about';

/** The token is checked by redeemGrant(); here only its length is bounded. */
export const RedeemGrant = {
  params: yup.object({
    token: yup.string().required().max(1024, 'token is too long').meta(about('The signed grant (`g1.<payload>.<signature>`) from `upload_url` or a download grant.')),
  }),
};
