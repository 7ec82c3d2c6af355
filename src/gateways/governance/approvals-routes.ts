/**
 * The HTTP approvals API on `switchboard serve`:
 *
 *   GET  /approvals          the calls held for a decision
 *   GET  /approvals/<id>     one held call, or the outcome of a decided one
 *   POST /approvals/<id>     {"decision": "approve" | "reject", "reason"?: string}
 *
 * Only principals holding an approver role may use it (without authentication configured, the
 * local caller is the operator and may). The server's Host and Origin guards apply, as to /mcp.
 * Four eyes: approving a call the bearer's principal made itself is refused with 403 and
 * `code: "SB_SELF_APPROVAL"` unless `policy.approvals.allowSelfApproval` (the registry decides).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import type { ApprovalRegistry, ApprovalRequest } from '../../policy/approvals.js';
import type { PolicyEngine } from '../../policy/policy-engine.js';
import type { Authenticate, ExtraRoute } from '../../transports/http/server/mcp-http-server.js';
import { readBody } from '../../transports/http/server/read-body.js';

const MAX_BODY = 16 * 1024;
const ITEM = /^\/approvals\/([0-9A-Za-z_-]{1,64})$/;

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function describe(request: ApprovalRequest): Record<string, unknown> {
  return {
    id: request.id,
    status: 'pending',
    principal: request.principal,
    upstream: request.upstream,
    method: request.method,
    target: request.target,
    tier: request.tier,
    ...(request.rule === undefined ? {} : { rule: request.rule }),
    ...(request.args === undefined ? {} : { args: request.args }),
    created: new Date(request.createdAt).toISOString(),
    expires: new Date(request.expiresAt).toISOString(),
    ...(request.traceId === undefined ? {} : { traceId: request.traceId }),
  };
}

export function approvalsRoutes(options: {
  readonly approvals: ApprovalRegistry;
  readonly policy: PolicyEngine;
  readonly authenticate?: Authenticate;
  /** No authentication configured: the local caller may approve. */
  readonly localIsTrusted: boolean;
  /** `server.bodyTimeout`: a decision's body must arrive within this, as an MCP request's must. */
  readonly bodyTimeoutMs: number;
}): ExtraRoute {
  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> => {
    if (path !== '/approvals' && !path.startsWith('/approvals/')) return false;
    const auth = options.authenticate
      ? await options.authenticate(req)
      : ({ ok: true, principal: 'local' } as const);
    if (!auth.ok) {
      send(res, auth.status, { error: auth.message }, auth.headers ?? {});
      return true;
    }
    const roles = 'roles' in auth && Array.isArray(auth.roles) ? (auth.roles as readonly string[]) : [];
    if (!(options.localIsTrusted || options.policy.isApprover(roles))) {
      send(res, 403, {
        error: `principal ${auth.principal} may not decide approvals (it needs one of the roles: ${options.policy.config.approvals.approverRoles.join(', ')})`,
      });
      return true;
    }
    if (path === '/approvals') {
      if (req.method !== 'GET') {
        send(res, 405, { error: 'use GET /approvals' }, { allow: 'GET' });
        return true;
      }
      send(res, 200, { approvals: options.approvals.pending().map(describe) });
      return true;
    }
    const match = ITEM.exec(path);
    if (!match) {
      send(res, 404, { error: 'no such approval' });
      return true;
    }
    const id = match[1]!;
    if (req.method === 'GET') {
      const pending = options.approvals.get(id);
      const outcome = pending ? undefined : options.approvals.outcomeOf(id);
      if (pending) send(res, 200, describe(pending));
      else if (outcome)
        send(res, 200, { id, status: outcome.approved ? 'approved' : outcome.why, ...outcome });
      else send(res, 404, { error: `no approval ${id}` });
      return true;
    }
    if (req.method !== 'POST') {
      send(res, 405, { error: 'use GET or POST /approvals/<id>' }, { allow: 'GET, POST' });
      return true;
    }
    const body = await readBody(req, { maxBytes: MAX_BODY, timeoutMs: options.bodyTimeoutMs });
    if (body.kind === 'timeout') {
      send(
        res,
        408,
        { error: `the body did not arrive within ${options.bodyTimeoutMs} ms (server.bodyTimeout)` },
        { connection: 'close' },
      );
      return true;
    }
    if (body.kind !== 'ok') {
      send(res, body.kind === 'too-large' ? 413 : 400, { error: 'the body must be a small JSON object' });
      return true;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.text);
    } catch {
      send(res, 400, {
        error: 'the body is not JSON; send {"decision": "approve" | "reject", "reason"?: "..."}',
      });
      return true;
    }
    const decision =
      typeof parsed === 'object' && parsed !== null
        ? (parsed as Record<string, unknown>).decision
        : undefined;
    const reason =
      typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).reason : undefined;
    if (
      (decision !== 'approve' && decision !== 'reject') ||
      (reason !== undefined && typeof reason !== 'string')
    ) {
      send(res, 400, { error: 'send {"decision": "approve" | "reject", "reason"?: "..."}' });
      return true;
    }
    const result = options.approvals.decide(id, {
      approve: decision === 'approve',
      by: auth.principal,
      ...(typeof reason === 'string' ? { reason: reason.slice(0, 500) } : {}),
    });
    if (result === 'unknown') send(res, 404, { error: `no approval ${id}` });
    else if (result === 'already-decided')
      send(res, 409, { error: `approval ${id} was already decided`, ...options.approvals.outcomeOf(id) });
    else if (result === 'self-approval')
      send(res, 403, {
        error: `principal ${auth.principal} made this call and may not approve it itself: another approver must (four eyes; policy.approvals.allowSelfApproval allows it)`,
        code: SbErrorCode.SelfApproval,
      });
    else
      send(res, 200, {
        id,
        status: decision === 'approve' ? 'approved' : 'rejected',
        decidedBy: auth.principal,
      });
    return true;
  };
}
