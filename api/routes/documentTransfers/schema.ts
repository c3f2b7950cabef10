import * as yup from 'yup';

/** The token is checked by redeemGrant(); here only its length is bounded. */
export const RedeemGrant = { params: yup.object({ token: yup.string().required().max(1024, 'token is too long') }) };
