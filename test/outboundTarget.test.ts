import { forbiddenAddress } from '../infra/outboundTarget';

describe('outbound targets', () => {
  it('refuses IPv4-compatible IPv6 (::/96) with the other special ranges, and takes public addresses', () => {
    for (const address of ['::7f00:1', '::a00:1', '::1.2.3.4', '::', '::1', '::ffff:127.0.0.1', '10.0.0.1']) expect([address, forbiddenAddress(address)]).toEqual([address, true]);
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']) expect([address, forbiddenAddress(address)]).toEqual([address, false]);
  });
});
