/**
 * What the Python SDK's tests (sdk/python/tests, run by test/sdk/python.test.ts) need: Debian's
 * interpreter with Debian's packages (a pyenv or venv `python3` on PATH does not see them), and
 * protoc with the gRPC Python plugin for the stub drift check.
 */
import { spawnSync } from 'node:child_process';

/** The interpreter the Python tests run on: Debian's, unless `TELHA_TEST_PYTHON` names another. */
export const PYTHON = process.env['TELHA_TEST_PYTHON'] ?? '/usr/bin/python3';

/** Each module the tests import, and the Debian package that provides it. */
const MODULES: Readonly<Record<string, string>> = {
  grpc: 'python3-grpcio',
  'google.protobuf': 'python3-protobuf',
  pytest: 'python3-pytest',
  pytest_asyncio: 'python3-pytest-asyncio',
  pydantic: 'python3-pydantic',
  // tests/test_types.py type-checks the package with it.
  mypy: 'mypy',
  // tests/test_package.py builds the wheel (`python3 -m build --no-isolation`: setuptools and
  // wheel are its backend) and installs it into a venv (pip there comes from ensurepip).
  build: 'python3-build',
  setuptools: 'python3-setuptools',
  wheel: 'python3-wheel',
  ensurepip: 'python3-venv',
};

/** Each command the tests run, and its Debian package. */
const COMMANDS: Readonly<Record<string, string>> = {
  // sdk/python/scripts/generate.sh, for the stub drift check.
  protoc: 'protobuf-compiler',
  grpc_python_plugin: 'protobuf-compiler-grpc',
  // tests/test_tls.py makes a self-signed certificate with it.
  openssl: 'openssl',
};

const FIND_MISSING =
  'import importlib.util, sys\n' +
  'def found(name):\n' +
  '    try:\n' +
  '        return importlib.util.find_spec(name) is not None\n' +
  '    except ImportError:\n' +
  '        return False\n' +
  'print(" ".join(m for m in sys.argv[1:] if not found(m)))';

/** The Debian packages missing for the Python SDK's tests, in install order; empty when all are there. */
export function missingPythonPackages(python: string = PYTHON): string[] {
  const modules = Object.keys(MODULES);
  const probe = spawnSync(python, ['-c', FIND_MISSING, ...modules], { encoding: 'utf8' });
  const missingModules = probe.status === 0 ? probe.stdout.trim().split(/\s+/).filter(Boolean) : modules;
  const packages = missingModules.map((module) => MODULES[module] ?? module);
  if (probe.status !== 0 && python === '/usr/bin/python3') packages.unshift('python3');
  for (const [command, pkg] of Object.entries(COMMANDS)) {
    if (spawnSync('sh', ['-c', `command -v ${command}`]).status !== 0) packages.push(pkg);
  }
  return packages;
}

/** `null` when the Python SDK's tests can run, else which packages to install and how. */
export function pythonProblem(python: string = PYTHON): string | null {
  const missing = missingPythonPackages(python);
  if (missing.length === 0) return null;
  return (
    `the Python SDK's tests need Debian packages that ${python} cannot find: ${missing.join(', ')}. ` +
    `Install them with \`apt-get install -y ${missing.join(' ')}\` (.ci/run does), ` +
    'or set TELHA_TEST_PYTHON to an interpreter that has them.'
  );
}
