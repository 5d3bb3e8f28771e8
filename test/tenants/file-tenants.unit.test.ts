import { fileTenantsProblem, servedTenants } from '../../core/file-tenants';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { createOperatorNames } from '../../platform/operator-names';

describe('a file\'s tenants', () => {
  test('names or "*" pass; anything else is a problem that says what is wanted', () => {
    expect(fileTenantsProblem('*')).toBeUndefined();
    expect(fileTenantsProblem(['acme', 'globex-2'])).toBeUndefined();
    expect(fileTenantsProblem('acme')).toMatch(/must be a list of tenant names or "\*"/);
    expect(fileTenantsProblem(null)).toMatch(/found null/);
    expect(fileTenantsProblem([])).toMatch(/lists no tenant/);
    expect(fileTenantsProblem(['acme', 'acme'])).toBe('names a tenant twice');
    expect(fileTenantsProblem([1, 'UPPER', '-x'])).toMatch(/^1, "UPPER", "-x": not a tenant name/);
    expect(fileTenantsProblem(Array.from({ length: 1001 }, (_, i) => `t${i}`))).toMatch(/lists 1001 tenants; at most 1000/);
  });

  test('served tenants are the listed ones that exist; "*" is every one', () => {
    const existing = new Map([['default', DEFAULT_TENANT_ID], ['acme', 'ten_acme']]);
    expect(servedTenants(['acme', 'future'], existing)).toEqual({ ids: ['ten_acme'], missing: ['future'] });
    expect(servedTenants('*', existing)).toEqual({ ids: [DEFAULT_TENANT_ID, 'ten_acme'], missing: [] });
  });

  test('a name the files refer to is reserved in the tenants they serve alone; without tenants, in default', () => {
    const names = createOperatorNames();
    names.replace('AGENTS_DIR', [
      { kind: 'agent', name: 'ops', by: 'agent file ops.chatmd', tenantIds: ['ten_acme'] },
      { kind: 'agent', name: 'all', by: 'agent file all.chatmd', tenantIds: '*' },
    ]);
    names.replace('INTEGRATIONS_FILE', [{ kind: 'integration', name: 'gh', by: 'INTEGRATIONS_FILE' }]);
    expect(names.referrers('agent', 'ops', 'ten_acme')).toEqual(['agent file ops.chatmd']);
    expect(names.referrers('agent', 'ops', DEFAULT_TENANT_ID)).toEqual([]);
    expect(names.referrers('agent', 'all', 'ten_any')).toEqual(['agent file all.chatmd']);
    expect(names.referrers('integration', 'gh', DEFAULT_TENANT_ID)).toEqual(['INTEGRATIONS_FILE']);
    expect(names.referrers('integration', 'gh', 'ten_acme')).toEqual([]);
  });
});
