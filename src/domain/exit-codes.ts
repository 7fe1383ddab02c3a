// Exit codes of the community installer scripts: what each one means, and the code an error
// text states (for reports without an exit_code field: /upload, early v1 finals).

/**
 * Every code the community client explains, in our words. Grouped as the client groups them:
 * shell, curl, BSD sysexits, package managers, the scripts' own checks and Proxmox/LXC setup,
 * signals (128 + N), services, language runtimes, databases, tools, apps.
 */
export const EXIT_CODE_EXPLANATIONS: ReadonlyMap<number, string> = new Map([
  // Shell
  [1, "General error"],
  [2, "Shell misuse or syntax error"],
  [3, "Syntax or argument error"],
  [10, "Needs Docker or a privileged container (unsupported environment)"],
  // curl (downloads)
  [4, "curl: unsupported protocol or feature"],
  [5, "curl: proxy host not found"],
  [6, "curl: host name not found (DNS)"],
  [7, "curl: could not connect to the server"],
  [8, "curl: unexpected server reply (or untrusted apk key)"],
  [16, "curl: HTTP/2 framing error"],
  [18, "curl: download ended early (partial file)"],
  [22, "curl: the server answered with an HTTP error (e.g. 404, 429, 5xx)"],
  [23, "curl: could not write the download (disk full or no permission)"],
  [24, "curl: could not write the local file"],
  [25, "curl: upload failed"],
  [26, "curl: could not read the local file"],
  [27, "curl: out of memory"],
  [28, "curl: timed out (slow network or no answer)"],
  [30, "curl: FTP PORT command failed"],
  [32, "curl: FTP SIZE command failed"],
  [33, "curl: HTTP range request failed"],
  [34, "curl: HTTP POST failed"],
  [35, "curl: TLS handshake failed (certificate problem)"],
  [36, "curl: could not resume the FTP download"],
  [39, "curl: LDAP search failed"],
  [44, "curl: internal error"],
  [45, "curl: could not bind to the network interface"],
  [46, "curl: wrong password"],
  [47, "curl: too many redirects"],
  [48, "curl: unknown command-line option"],
  [51, "curl: server certificate or SSH host key not trusted"],
  [52, "curl: the server sent an empty reply"],
  [55, "curl: sending data failed"],
  [56, "curl: receiving data failed (connection reset)"],
  [57, "curl: poll/select failed (system I/O error)"],
  [59, "curl: the requested TLS cipher cannot be used"],
  [61, "curl: unknown transfer encoding"],
  [63, "curl: file larger than the allowed maximum"],
  [78, "curl: remote file not found"],
  [79, "curl: SSH session failed (key exchange or login)"],
  [92, "curl: HTTP/2 stream error"],
  [95, "curl: HTTP/3 error"],
  // BSD sysexits
  [64, "Wrong command-line usage"],
  [65, "Bad input data"],
  [66, "Input file missing or unreadable"],
  [67, "Unknown user"],
  [68, "Unknown host name"],
  [69, "Service unavailable"],
  [70, "Internal software error"],
  [71, "Operating system error"],
  [72, "Essential system file missing"],
  [73, "Could not create an output file"],
  [74, "Input/output error"],
  [75, "Temporary failure (a later retry may work)"],
  [76, "Remote protocol error"],
  [77, "Permission denied"],
  // Package managers
  [100, "APT: install failed (broken packages or dependencies)"],
  [101, "APT: bad configuration (sources list or config file)"],
  [102, "APT: package database locked by another apt/dpkg process"],
  [255, "dpkg: fatal internal error"],
  // The scripts' own checks before anything is created
  [103, "Check failed: the shell is not Bash"],
  [104, "Check failed: not running as root"],
  [105, "Check failed: unsupported Proxmox VE version"],
  [106, "Check failed: unsupported CPU architecture"],
  [107, "Check failed: kernel keyring settings unreadable"],
  [108, "Check failed: kernel keyring limits reached"],
  // Container and VM setup
  [109, "Proxmox: no free container ID found"],
  [110, "Proxmox: default settings (default.vars) could not be applied"],
  [111, "Proxmox: the app's defaults file is missing"],
  [112, "Proxmox: invalid choice in the install menu"],
  [113, "LXC: the user stopped the update (container too small)"],
  [114, "LXC: the user stopped the update (too little storage)"],
  [115, "Download of the installer functions failed or was incomplete"],
  [116, "Proxmox: default network bridge vmbr0 missing"],
  [117, "LXC: the container never reached the running state"],
  [118, "LXC: the container got no IP address in time"],
  [119, "Proxmox: no storage can hold container disks (rootdir)"],
  [120, "Proxmox: no storage can hold templates (vztmpl)"],
  [121, "LXC: container network not ready (no IP after retries)"],
  [122, "LXC: no internet access and the user chose to stop"],
  [123, "LXC: could not detect the local IP address"],
  [200, "Proxmox: could not create a lock file"],
  [203, "Proxmox: container ID (CTID) not set"],
  [204, "Proxmox: container OS type (PCT_OSTYPE) not set"],
  [205, "Proxmox: container ID below 100"],
  [206, "Proxmox: container ID already taken"],
  [207, "Proxmox: password has unescaped special characters"],
  [208, "Proxmox: invalid network settings (DNS, MAC or network format)"],
  [209, "Proxmox: creating the container failed"],
  [210, "Proxmox: the cluster has no quorum"],
  [211, "Proxmox: timed out waiting for the template lock"],
  [212, "Proxmox: iSCSI-direct storage cannot hold containers"],
  [213, "Proxmox: the storage does not allow container disks (rootdir)"],
  [214, "Proxmox: not enough free storage"],
  [215, "Proxmox: container created but missing from the list"],
  [216, "Proxmox: the container config has no root filesystem"],
  [217, "Proxmox: storage not reachable"],
  [218, "Proxmox: template file damaged or incomplete"],
  [219, "Proxmox: CephFS cannot hold containers (use RBD)"],
  [220, "Proxmox: template path could not be resolved"],
  [221, "Proxmox: template file not readable"],
  [222, "Proxmox: template download failed"],
  [223, "Proxmox: template missing after download"],
  [224, "Proxmox: backup (PBS) storage cannot hold containers"],
  [225, "Proxmox: no template for this OS and version"],
  [226, "Proxmox: VM disk import or setup after creation failed"],
  [227, "Proxmox: container created but would not start"],
  [231, "Proxmox: LXC stack upgrade failed"],
  // Commands and signals (128 + signal number)
  [124, "Command timed out"],
  [125, "Command could not be started (e.g. Docker daemon error)"],
  [126, "Command found but not executable (permissions?)"],
  [127, "Command not found"],
  [128, "Invalid argument to exit"],
  [129, "Hangup (SIGHUP): the terminal was closed"],
  [130, "Interrupted by the user (SIGINT, Ctrl-C)"],
  [131, "Quit (SIGQUIT), core dumped"],
  [132, "Illegal CPU instruction (SIGILL)"],
  [134, "Aborted (SIGABRT), e.g. Node.js heap overflow"],
  [137, "Killed (SIGKILL), often out of memory"],
  [139, "Segmentation fault (SIGSEGV)"],
  [141, "Broken pipe (SIGPIPE)"],
  [143, "Terminated (SIGTERM)"],
  [144, "Killed by signal 16"],
  [146, "Killed by signal 18"],
  // Services and builds
  [150, "systemd: service failed to start"],
  [151, "systemd: service unit not found"],
  [152, "Permission denied (EACCES)"],
  [153, "Build failed (make, gcc or cmake)"],
  [154, "Node.js: native addon build failed (node-gyp)"],
  // Python
  [160, "Python: virtual environment missing or broken"],
  [161, "Python: dependencies could not be resolved"],
  [162, "Python: install refused (permissions or externally managed environment)"],
  // Databases
  [170, "PostgreSQL: cannot connect"],
  [171, "PostgreSQL: login failed"],
  [172, "PostgreSQL: database missing"],
  [173, "PostgreSQL: query failed"],
  [180, "MySQL/MariaDB: cannot connect"],
  [181, "MySQL/MariaDB: login failed"],
  [182, "MySQL/MariaDB: database missing"],
  [183, "MySQL/MariaDB: query failed"],
  [190, "MongoDB: cannot connect"],
  [191, "MongoDB: login failed"],
  [192, "MongoDB: database missing"],
  [193, "MongoDB: query failed"],
  // The engine
  [199, "Engine: no exit code was reported to the telemetry call"],
  // Tool and addon scripts
  [232, "Tool: run it on the Proxmox host, not in a container"],
  [233, "Tool: the app to update is not installed"],
  [234, "Tool: no containers found"],
  [235, "Tool: backup or restore failed"],
  [236, "Tool: required hardware not found"],
  [237, "Tool: installing a dependency failed"],
  [238, "Tool: OS or distribution not supported"],
  // Node.js and its package managers
  [239, "npm/Node.js: runtime or dependency error"],
  [243, "Node.js: JavaScript heap out of memory"],
  [245, "Node.js: invalid command-line option"],
  [246, "Node.js: internal JavaScript parse error"],
  [247, "Node.js: fatal internal error"],
  [248, "Node.js: native (C++/N-API) addon failed"],
  [249, "npm/pnpm/yarn: fatal error"],
  // The app being installed or updated
  [250, "App: download failed or version unknown"],
  [251, "App: unpacking the archive failed"],
  [252, "App: required file or resource missing"],
  [253, "App: update stopped, a data migration is needed first"],
  [254, "App: the user declined, or the prompt timed out"],
]);

export function explainExitCode(code: number): string {
  if (code === 0) return "Success";
  return EXIT_CODE_EXPLANATIONS.get(code) ?? "Unknown error";
}

// The words the legacy client's SIGINT and SIGTERM traps sent as the whole error text.
const TRAP_WORDS: ReadonlyMap<string, number> = new Map([
  ["interrupted", 130],
  ["terminated", 143],
]);

// "exit_code=N" (current header, .errinfo's EXIT_CODE=N), "exit code N", "Exit code N:",
// "exit status N", "exited with [exit] code|status N", "returned [with] code N". Not a bare
// "returned N" (HTTP statuses, row counts) nor "error code (N)" (dpkg's subprocess inside
// apt, not the script's exit). A number followed by ".digit" is a version, not a code.
const CODE_STATEMENT =
  /\b(?:exit(?:ed with(?: exit)?)?[ _-]?(?:code|status)|returned(?: with)? code)\s*[=:]?\s*\(?(\d+)(?!\d|\.\d)/i;

/**
 * The exit code an error text states: a bare number as the whole text, a trap word, else the
 * first statement in the text (current clients put theirs on the first line, before the log).
 * Null when none is stated or the stated one is not 0-255.
 */
export function parseExitCode(error: string | null): number | null {
  if (error === null) return null;
  const whole = error.trim().toLowerCase();
  const trap = TRAP_WORDS.get(whole);
  if (trap !== undefined) return trap;
  const stated = /^\d+$/.test(whole) ? whole : CODE_STATEMENT.exec(error)?.[1];
  if (stated === undefined) return null;
  const code = Number(stated);
  return code <= 255 ? code : null;
}
