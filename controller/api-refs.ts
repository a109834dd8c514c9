// REST coordinates of the worldline kinds, from the API definition in crds/.
import { API_VERSION as GROUP_VERSION } from '../crds/api-group.js';
import { resources } from '../crds/index.js';

export const refs = resources;
export const API_VERSION = GROUP_VERSION;
